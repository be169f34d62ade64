//! `--json` output of tools whose text output is `key=value` tokens: the same keys, typed.

use serde_json::{Map, Value};

/// `key=value` tokens as a JSON object: numbers and booleans as such, the rest as strings;
/// tokens without `=` are left out.
pub fn key_values<'a>(tokens: impl Iterator<Item = &'a str>) -> Value {
    let map: Map<String, Value> = tokens
        .filter_map(|t| t.split_once('='))
        .map(|(k, v)| {
            let v = serde_json::from_str::<Value>(v)
                .ok()
                .filter(|j| j.is_number() || j.is_boolean())
                .unwrap_or_else(|| Value::from(v));
            (k.to_string(), v)
        })
        .collect();
    Value::Object(map)
}

/// An event line (`what: text`, `RESULT k=v ...`) as one JSON object: `event` (the first
/// word, without its colon), `line` (the whole text) and its `key=value` tokens.
pub fn event_line(line: &str) -> Value {
    let mut v = key_values(line.split_whitespace());
    let event = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(':');
    v["event"] = Value::from(event);
    v["line"] = Value::from(line);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_become_typed_json() {
        let v = key_values("pgid=42 ratio=1:3 remote_pct=24.5 auto=true plain".split(' '));
        assert_eq!(v["pgid"], 42);
        assert_eq!(v["ratio"], "1:3");
        assert_eq!(v["remote_pct"], 24.5);
        assert_eq!(v["auto"], true);
        assert!(v.get("plain").is_none());
    }

    #[test]
    fn event_lines() {
        let v = event_line("RESULT lender=2 instance=0 acked=yes");
        assert_eq!(v["event"], "RESULT");
        assert_eq!(v["lender"], 2);
        assert_eq!(v["acked"], "yes");
        let v = event_line("offer: from node 1 instance 0 first 3 chunks 8");
        assert_eq!(v["event"], "offer");
        assert_eq!(v["line"], "offer: from node 1 instance 0 first 3 chunks 8");
    }
}
