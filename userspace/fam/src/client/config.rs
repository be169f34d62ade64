//! Where `famd` is and how long to wait for it: the node from the environment, the
//! configuration file or the options, and the control timeout.

use std::time::Duration;

/// Environment variable naming famd's node (it wins over everything else).
pub const FAMD_NODE_ENV: &str = "UNIMEM_FAMD_NODE";
/// The cluster's FAM configuration: `key = value` lines, `#` comments.
pub const CONFIG_FILE: &str = "/etc/unimem/fam.conf";
/// The key of famd's node in [`CONFIG_FILE`].
pub const FAMD_NODE_KEY: &str = "famd_node";
/// Environment variable with the control timeout in milliseconds.
pub const TIMEOUT_ENV: &str = "UNIMEM_FAM_TIMEOUT_MS";
/// Control timeout when [`TIMEOUT_ENV`] is not set: famd answers from memory, so anything
/// slower than this is a dead or unreachable daemon (TCG clusters included).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(10_000);

/// Where the node number came from (reported in error messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Env,
    File,
    CisServer,
    Default,
}

/// Value of `key` in configuration text (`key = value` lines; `#` starts a comment).
pub fn config_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or("");
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn node_number(s: &str) -> Option<u16> {
    s.trim().parse::<u16>().ok()
}

/// famd's node, in this order: `env` (the value of [`FAMD_NODE_ENV`]), `famd_node` in the
/// configuration text `file`, Fam_Options' `cisServer` if it is a number, else node 0.
/// A value that is set but not a node number is an error, not skipped: a typo must not send
/// requests to another node.
pub fn resolve_famd_node(
    env: Option<&str>,
    file: Option<&str>,
    cis_server: Option<&str>,
) -> Result<(u16, Source), String> {
    if let Some(v) = env {
        return node_number(v)
            .map(|n| (n, Source::Env))
            .ok_or(format!("{FAMD_NODE_ENV}={v:?} is not a node number"));
    }
    if let Some(v) = file.and_then(|t| config_value(t, FAMD_NODE_KEY)) {
        return node_number(&v).map(|n| (n, Source::File)).ok_or(format!(
            "{CONFIG_FILE}: {FAMD_NODE_KEY} = {v:?} is not a node number"
        ));
    }
    if let Some(n) = cis_server.and_then(node_number) {
        return Ok((n, Source::CisServer));
    }
    Ok((0, Source::Default))
}

/// [`resolve_famd_node`] with this process's environment and the real configuration file.
pub fn famd_node(cis_server: Option<&str>) -> Result<(u16, Source), String> {
    let env = std::env::var(FAMD_NODE_ENV).ok();
    let file = std::fs::read_to_string(CONFIG_FILE).ok();
    resolve_famd_node(env.as_deref(), file.as_deref(), cis_server)
}

/// The control timeout: [`TIMEOUT_ENV`] milliseconds (at least 1), else [`DEFAULT_TIMEOUT`].
pub fn timeout_from(env: Option<&str>) -> Duration {
    env.and_then(|v| v.trim().parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms.max(1)))
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// [`timeout_from`] this process's environment.
pub fn timeout() -> Duration {
    timeout_from(std::env::var(TIMEOUT_ENV).ok().as_deref())
}
