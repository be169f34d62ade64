//! Man pages and shell completions of unimem's binaries, from their clap definitions.
//!
//! A binary's `Cli` type lives only in that binary, so each binary writes its own: run with
//! `UNIMEM_CLIDOC=DIR`, it writes `DIR/man/NAME.SECTION` (and a page per subcommand,
//! `NAME-SUB.SECTION`) and `DIR/{bash,zsh,fish}/` completions, then exits without doing
//! anything else (clap_complete's dynamic completion is asked the same way, through the
//! environment). `make install` (scripts/install.sh) runs every installed binary so.
//! [`json`] turns the tools' `key=value` output into their `--json` output.

pub mod json;

use clap::Command;
use clap_complete::Shell;
use std::path::Path;

/// The environment variable that asks for the files, naming the directory they go to.
pub const ENV: &str = "UNIMEM_CLIDOC";

/// Called first in `main`: when [`ENV`] is set, writes the man pages (in `section`: 1 for
/// commands, 8 for daemons) and completions of `cmd()` and exits.
pub fn generate_if_asked(cmd: impl FnOnce() -> Command, section: &str) {
    let Some(dir) = std::env::var_os(ENV) else {
        return;
    };
    // Named as the binary, not the package (clap's default): gsas has gsasd and unimem-gsas.
    let name = std::env::args_os()
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let cmd = cmd();
    let cmd = if name.is_empty() { cmd } else { cmd.name(name) };
    let name = cmd.get_name().to_owned();
    match generate(cmd, section, Path::new(&dir)) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{name}: writing man pages and completions to {dir:?}: {e}");
            std::process::exit(1);
        }
    }
}

/// Writes the man pages and the completions of `cmd` under `dir`.
pub fn generate(cmd: Command, section: &str, dir: &Path) -> std::io::Result<()> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let man = dir.join("man");
    std::fs::create_dir_all(&man)?;
    man_pages(&cmd, section, &man)?;
    let name = cmd.get_name().to_owned();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let out = dir.join(shell.to_string());
        std::fs::create_dir_all(&out)?;
        clap_complete::generate_to(shell, &mut cmd, &name, &out)?;
    }
    Ok(())
}

/// As `clap_mangen::generate_to`, in the given section.
fn man_pages(cmd: &Command, section: &str, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, section, dir)?;
    }
    clap_mangen::Man::new(cmd.clone())
        .section(section)
        .generate_to(dir)
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    #[test]
    fn pages_per_subcommand_and_completions() {
        let dir = std::env::temp_dir().join(format!("unimem-clidoc-{}", std::process::id()));
        let cmd = Command::new("tool")
            .version("1.0")
            .about("does things")
            .arg(
                Arg::new("verbose")
                    .long("verbose")
                    .action(ArgAction::SetTrue),
            )
            .subcommand(Command::new("ring").about("rings"))
            .subcommand(Command::new("secret").hide(true));
        generate(cmd, "8", &dir).unwrap();
        let page = std::fs::read_to_string(dir.join("man/tool.8")).unwrap();
        assert!(
            page.contains(".TH tool 8") && page.contains("verbose"),
            "{page}"
        );
        assert!(dir.join("man/tool-ring.8").exists());
        assert!(!dir.join("man/tool-secret.8").exists());
        for f in ["bash/tool.bash", "zsh/_tool", "fish/tool.fish"] {
            assert!(dir.join(f).exists(), "{f}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
