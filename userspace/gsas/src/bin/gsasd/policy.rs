//! The administrator's remoteFork policy (`gsasd --policy FILE`): which programs may be forked on
//! this node, and by whom. One rule a line, `#` comments:
//!
//! ```text
//! allow-path /usr/bin/*        # glob on the program's absolute path, symlinks resolved
//! deny-path  /usr/bin/sudo
//! allow-user alice             # name or uid
//! allow-group unimem           # name or gid: the child's groups (primary and supplementary)
//! deny-user  1001
//! deny-group guests
//! ```
//!
//! A deny rule that matches refuses the job. Then, if there is any `allow-path` rule, the path
//! must match one; if there is any `allow-user` or `allow-group` rule, the uid must match an
//! `allow-user` or one of the child's groups an `allow-group`. No rules: everything is allowed.
//! Globs: `*` and `?` do not match `/`, `**` matches anything, `[a-z]` / `[!a-z]` one character.
//! Names are looked up when the file is read: an unknown one is an error (a typo in a deny rule
//! must not go unnoticed).

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    AllowPath,
    DenyPath,
    AllowUser,
    DenyUser,
    AllowGroup,
    DenyGroup,
}

impl Kind {
    const ALL: [(&'static str, Kind); 6] = [
        ("allow-path", Kind::AllowPath),
        ("deny-path", Kind::DenyPath),
        ("allow-user", Kind::AllowUser),
        ("deny-user", Kind::DenyUser),
        ("allow-group", Kind::AllowGroup),
        ("deny-group", Kind::DenyGroup),
    ];
}

#[derive(Debug)]
enum Value {
    Glob(Glob),
    Id(u32),
}

#[derive(Debug)]
struct Rule {
    kind: Kind,
    value: Value,
    /// As written, for messages.
    text: String,
    line: usize,
}

/// The rules of one file.
#[derive(Debug, Default)]
pub struct Policy {
    file: String,
    rules: Vec<Rule>,
}

/// A syntax error, an unknown name or a bad glob, at `file:line`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

/// Why a job was refused: the rule, or the missing one.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Name lookups (the system's passwd and group databases; a table in the tests).
pub trait Names {
    fn uid(&self, name: &str) -> Option<u32>;
    fn gid(&self, name: &str) -> Option<u32>;
}

/// The node's own databases.
pub struct SystemNames;

impl Names for SystemNames {
    fn uid(&self, name: &str) -> Option<u32> {
        nix::unistd::User::from_name(name)
            .ok()
            .flatten()
            .map(|u| u.uid.as_raw())
    }
    fn gid(&self, name: &str) -> Option<u32> {
        nix::unistd::Group::from_name(name)
            .ok()
            .flatten()
            .map(|g| g.gid.as_raw())
    }
}

impl Policy {
    /// Parses `text`, read from `file` (named in errors).
    pub fn parse(text: &str, file: &str, names: &dyn Names) -> Result<Policy, ParseError> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |msg: String| ParseError {
                file: file.to_string(),
                line,
                msg,
            };
            // A comment starts the line or follows a blank (a glob may hold a `#`).
            let mut words = Vec::new();
            for w in raw.split_whitespace() {
                if w.starts_with('#') {
                    break;
                }
                words.push(w);
            }
            let (kw, value) = match words[..] {
                [] => continue,
                [kw, value] => (kw, value),
                [kw] => return Err(err(format!("{kw}: no value"))),
                [kw, ..] => {
                    return Err(err(format!(
                        "{kw}: one value a line, not {}",
                        words.len() - 1
                    )))
                }
            };
            let Some(&(_, kind)) = Kind::ALL.iter().find(|(n, _)| *n == kw) else {
                return Err(err(format!(
                    "unknown rule {kw:?} (allow-path, deny-path, allow-user, deny-user, allow-group, deny-group)"
                )));
            };
            let id = |what: &str, look: &dyn Fn(&str) -> Option<u32>| {
                if value.bytes().all(|b| b.is_ascii_digit()) {
                    value
                        .parse::<u32>()
                        .map_err(|_| err(format!("{what} id {value} out of range")))
                } else {
                    look(value)
                        .ok_or_else(|| err(format!("no {what} named {value:?} on this node")))
                }
            };
            let value = match kind {
                Kind::AllowPath | Kind::DenyPath => {
                    if !value.starts_with('/') {
                        return Err(err(format!("{kw} {value}: the pattern must be absolute")));
                    }
                    Value::Glob(Glob::new(value).map_err(|e| err(format!("{kw} {value}: {e}")))?)
                }
                Kind::AllowUser | Kind::DenyUser => Value::Id(id("user", &|n| names.uid(n))?),
                Kind::AllowGroup | Kind::DenyGroup => Value::Id(id("group", &|n| names.gid(n))?),
            };
            rules.push(Rule {
                kind,
                value,
                text: raw.trim().to_string(),
                line,
            });
        }
        Ok(Policy {
            file: file.to_string(),
            rules,
        })
    }

    /// Whether a decision needs the program's path (resolved: it costs a lookup).
    pub fn has_path_rules(&self) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.kind, Kind::AllowPath | Kind::DenyPath))
    }

    /// Rules of each kind, for the start-up message.
    pub fn summary(&self) -> String {
        let counts: Vec<String> = Kind::ALL
            .iter()
            .filter_map(|&(n, k)| {
                let c = self.rules.iter().filter(|r| r.kind == k).count();
                (c > 0).then(|| format!("{c} {n}"))
            })
            .collect();
        if counts.is_empty() {
            "no rules".into()
        } else {
            counts.join(", ")
        }
    }

    /// May `uid`, whose child would have the groups `groups`, fork the program at `path`
    /// (absolute, symlinks resolved; `None` when [`has_path_rules`](Self::has_path_rules) is
    /// false)?
    pub fn decide(&self, uid: u32, groups: &[u32], path: Option<&[u8]>) -> Result<(), Refusal> {
        let matches = |r: &Rule| match (&r.value, r.kind) {
            (Value::Id(id), Kind::AllowUser | Kind::DenyUser) => *id == uid,
            (Value::Id(id), _) => groups.contains(id),
            (Value::Glob(g), _) => path.is_some_and(|p| g.matches(p)),
        };
        let rule = |r: &Rule| format!("rule {:?} at {}:{}", r.text, self.file, r.line);
        if let Some(r) = self
            .rules
            .iter()
            .filter(|r| matches!(r.kind, Kind::DenyUser | Kind::DenyGroup | Kind::DenyPath))
            .find(|r| matches(r))
        {
            return Err(Refusal(rule(r)));
        }
        // Where allow rules of a kind exist, one of them must match.
        let allowed = |kinds: &[Kind]| {
            let mut of_kind = self.rules.iter().filter(|r| kinds.contains(&r.kind));
            let mut any = false;
            of_kind.any(|r| {
                any = true;
                matches(r)
            }) || !any
        };
        if !allowed(&[Kind::AllowPath]) {
            return Err(Refusal(format!(
                "no allow-path rule of {} matches",
                self.file
            )));
        }
        if !allowed(&[Kind::AllowUser, Kind::AllowGroup]) {
            return Err(Refusal(format!(
                "no allow-user or allow-group rule of {} matches uid {uid} (groups {groups:?})",
                self.file
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Byte(u8),
    /// `?`
    One,
    /// `*`
    Star,
    /// `**`
    Any,
    /// `[...]`: inclusive ranges, negated.
    Class(Vec<(u8, u8)>, bool),
}

/// A shell-style pattern on a path (bytes: paths need not be UTF-8).
#[derive(Debug)]
pub struct Glob(Vec<Token>);

impl Glob {
    pub fn new(pat: &str) -> Result<Glob, String> {
        let p = pat.as_bytes();
        let mut t = Vec::new();
        let mut i = 0;
        while i < p.len() {
            match p[i] {
                b'*' if p.get(i + 1) == Some(&b'*') => {
                    t.push(Token::Any);
                    i += 2;
                    while p.get(i) == Some(&b'*') {
                        i += 1;
                    }
                    continue;
                }
                b'*' => t.push(Token::Star),
                b'?' => t.push(Token::One),
                b'\\' => {
                    i += 1;
                    t.push(Token::Byte(*p.get(i).ok_or("a trailing backslash")?));
                }
                b'[' => {
                    i += 1;
                    let neg = matches!(p.get(i), Some(b'!' | b'^'));
                    if neg {
                        i += 1;
                    }
                    let mut ranges = Vec::new();
                    // A `]` first is a member, as in the shell.
                    let mut first = true;
                    loop {
                        let c = *p.get(i).ok_or("an unclosed [")?;
                        if c == b']' && !first {
                            break;
                        }
                        first = false;
                        if p.get(i + 1) == Some(&b'-') && p.get(i + 2).is_some_and(|&e| e != b']') {
                            let e = p[i + 2];
                            if e < c {
                                return Err(format!(
                                    "the range {}-{} is empty",
                                    c as char, e as char
                                ));
                            }
                            ranges.push((c, e));
                            i += 3;
                        } else {
                            ranges.push((c, c));
                            i += 1;
                        }
                    }
                    t.push(Token::Class(ranges, neg));
                }
                c => t.push(Token::Byte(c)),
            }
            i += 1;
        }
        Ok(Glob(t))
    }

    /// Whether the whole of `s` matches: dynamic programming over (token, position), so that no
    /// pattern costs more than its length times the path's.
    pub fn matches(&self, s: &[u8]) -> bool {
        let m = s.len();
        // next[j]: the tokens after the current one match s[j..].
        let mut next = vec![false; m + 1];
        next[m] = true;
        let mut cur = vec![false; m + 1];
        for tok in self.0.iter().rev() {
            cur[m] = matches!(tok, Token::Star | Token::Any) && next[m];
            for j in (0..m).rev() {
                let c = s[j];
                cur[j] = match tok {
                    Token::Byte(b) => c == *b && next[j + 1],
                    Token::One => c != b'/' && next[j + 1],
                    Token::Class(r, neg) => {
                        c != b'/'
                            && (r.iter().any(|&(a, z)| a <= c && c <= z) != *neg)
                            && next[j + 1]
                    }
                    Token::Star => next[j] || (c != b'/' && cur[j + 1]),
                    Token::Any => next[j] || cur[j + 1],
                };
            }
            std::mem::swap(&mut cur, &mut next);
        }
        next[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Table;
    impl Names for Table {
        fn uid(&self, name: &str) -> Option<u32> {
            [
                ("root", 0),
                ("alice", 1000),
                ("bob", 1001),
                ("nobody", 65534),
            ]
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, u)| u)
        }
        fn gid(&self, name: &str) -> Option<u32> {
            [("root", 0), ("unimem", 900), ("guests", 950)]
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, g)| g)
        }
    }

    fn parse(text: &str) -> Policy {
        Policy::parse(text, "fork.policy", &Table).unwrap()
    }

    fn parse_err(text: &str) -> String {
        Policy::parse(text, "fork.policy", &Table)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("/usr/bin/*", "/usr/bin/true", true),
            ("/usr/bin/*", "/usr/bin/", true),
            ("/usr/bin/*", "/usr/bin/x/y", false),
            ("/usr/bin/*", "/usr/bin", false),
            ("/usr/**", "/usr/lib/x/y", true),
            ("/usr/**/true", "/usr/a/b/true", true),
            ("/usr/**/true", "/usr/true", false),
            ("/usr/bin/t?ue", "/usr/bin/true", true),
            ("/usr/bin/t?ue", "/usr/bin/t/ue", false),
            ("/opt/[a-c]*", "/opt/bin", true),
            ("/opt/[a-c]*", "/opt/dbin", false),
            ("/opt/[!a-c]*", "/opt/dbin", true),
            ("/opt/[]x]", "/opt/]", true),
            ("/opt/a\\*", "/opt/a*", true),
            ("/opt/a\\*", "/opt/ab", false),
            ("/bin/true", "/bin/true", true),
            ("/bin/true", "/bin/truex", false),
            ("*", "", true),
            ("/a*a*a*a*a*a*a*b", &format!("/{}", "a".repeat(4000)), false),
        ];
        for &(p, s, want) in cases {
            assert_eq!(
                Glob::new(p).unwrap().matches(s.as_bytes()),
                want,
                "{p} on {s}"
            );
        }
        assert!(Glob::new("/opt/[ab").is_err());
        assert!(Glob::new("/opt/a\\").is_err());
        assert!(Glob::new("/opt/[z-a]").is_err());
    }

    #[test]
    fn parser() {
        let p = parse(
            "# a comment\n\n  allow-path /usr/bin/*   # tools\nallow-user alice\nallow-user 1234\ndeny-group guests\nallow-path /opt/#x\n",
        );
        assert_eq!(p.rules.len(), 5);
        assert_eq!(p.summary(), "2 allow-path, 2 allow-user, 1 deny-group");
        assert!(p.has_path_rules());
        assert!(matches!(p.rules[1].value, Value::Id(1000)));
        assert!(matches!(p.rules[2].value, Value::Id(1234)));
        assert!(matches!(p.rules[3].value, Value::Id(950)));
        assert_eq!(p.rules[4].line, 7);
        assert!(parse("# nothing\n").rules.is_empty());
        assert!(!parse("deny-user bob").has_path_rules());
        for (text, want) in [
            (
                "allow-user alice\nallow-usr bob",
                "fork.policy:2: unknown rule \"allow-usr\"",
            ),
            ("allow-user", "fork.policy:1: allow-user: no value"),
            (
                "\n\nallow-user alice bob",
                "fork.policy:3: allow-user: one value a line, not 2",
            ),
            (
                "deny-user mallory",
                "fork.policy:1: no user named \"mallory\" on this node",
            ),
            (
                "allow-group nogroup",
                "fork.policy:1: no group named \"nogroup\"",
            ),
            (
                "allow-user 99999999999",
                "fork.policy:1: user id 99999999999 out of range",
            ),
            (
                "allow-path usr/bin/*",
                "fork.policy:1: allow-path usr/bin/*: the pattern must be absolute",
            ),
            (
                "deny-path /usr/[ab",
                "fork.policy:1: deny-path /usr/[ab: an unclosed [",
            ),
        ] {
            let e = parse_err(text);
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    /// The shipped example, every rule uncommented, parses.
    #[test]
    fn the_example_parses() {
        let text: String = include_str!("../../../../../dist/unimem/fork.policy.example")
            .lines()
            .map(|l| match l.strip_prefix('#') {
                Some(rule) if rule.starts_with("allow-") || rule.starts_with("deny-") => rule,
                _ => l,
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let p = parse(&text);
        assert_eq!(
            p.summary(),
            "3 allow-path, 2 deny-path, 1 allow-user, 1 deny-user, 1 allow-group"
        );
        assert!(p.decide(1000, &[1000, 900], Some(b"/usr/bin/id")).is_ok());
        assert!(p
            .decide(1000, &[1000, 900], Some(b"/usr/bin/sudo"))
            .is_err());
        assert!(p.decide(1000, &[1000], Some(b"/usr/bin/id")).is_err());
    }

    #[test]
    fn decisions() {
        let p = parse(
            "allow-path /usr/bin/*\nallow-path /opt/unimem/bin/*\ndeny-path /usr/bin/sudo\nallow-user alice\nallow-group unimem\ndeny-user bob\n",
        );
        let ok = |uid, groups: &[u32], path: &str| p.decide(uid, groups, Some(path.as_bytes()));
        assert_eq!(ok(1000, &[1000], "/usr/bin/id"), Ok(()));
        // A member of an allowed group.
        assert_eq!(
            ok(2000, &[2000, 900], "/opt/unimem/bin/unimem-gsas"),
            Ok(())
        );
        let why = |r: Result<(), Refusal>| r.unwrap_err().0;
        assert_eq!(
            why(ok(1000, &[1000], "/usr/bin/sudo")),
            "rule \"deny-path /usr/bin/sudo\" at fork.policy:3"
        );
        assert_eq!(
            why(ok(1000, &[1000], "/tmp/x")),
            "no allow-path rule of fork.policy matches"
        );
        assert_eq!(
            why(ok(2000, &[2000], "/usr/bin/id")),
            "no allow-user or allow-group rule of fork.policy matches uid 2000 (groups [2000])"
        );
        // Deny wins over an allowed group.
        assert_eq!(
            why(ok(1001, &[1001, 900], "/usr/bin/id")),
            "rule \"deny-user bob\" at fork.policy:6"
        );
        // Root is a user like any other here (the CAP_SYS_ADMIN check comes first).
        assert!(ok(0, &[0], "/usr/bin/id").is_err());

        // Only deny rules: everything else passes.
        let p = parse("deny-group guests\ndeny-path /usr/bin/s*");
        assert_eq!(
            p.decide(5, &[5, 950], Some(b"/bin/x")).unwrap_err().0,
            "rule \"deny-group guests\" at fork.policy:1"
        );
        assert!(p.decide(5, &[5], Some(b"/usr/bin/su")).is_err());
        assert!(p.decide(5, &[5], Some(b"/usr/bin/id")).is_ok());
        // No path rules: no path needed.
        let p = parse("allow-user root");
        assert!(p.decide(0, &[0], None).is_ok());
        assert!(p.decide(1000, &[1000], None).is_err());
        assert!(parse("").decide(1000, &[1000], None).is_ok());
    }
}
