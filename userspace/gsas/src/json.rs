//! A one-line JSON object for `--json` output (numbers, strings, arrays of numbers and of
//! objects): all a script needs, without a serialization framework.

use std::fmt;

#[derive(Default)]
pub struct Obj {
    fields: Vec<(String, String)>,
}

fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Obj {
    pub fn new() -> Self {
        Obj::default()
    }

    fn raw(mut self, k: &str, v: String) -> Self {
        self.fields.push((k.to_string(), v));
        self
    }

    pub fn num(self, k: &str, v: impl Into<u64>) -> Self {
        self.raw(k, v.into().to_string())
    }

    pub fn float(self, k: &str, v: f64) -> Self {
        let s = if v.is_finite() {
            format!("{v:.3}")
        } else {
            "null".into()
        };
        self.raw(k, s)
    }

    pub fn str(self, k: &str, v: &str) -> Self {
        self.raw(k, quote(v))
    }

    pub fn bool(self, k: &str, v: bool) -> Self {
        self.raw(k, v.to_string())
    }

    pub fn nums(self, k: &str, v: &[u64]) -> Self {
        let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        self.raw(k, format!("[{}]", items.join(",")))
    }

    pub fn objs(self, k: &str, v: &[Obj]) -> Self {
        let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        self.raw(k, format!("[{}]", items.join(",")))
    }
}

impl fmt::Display for Obj {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{v}", quote(k))?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_json() {
        let o = Obj::new()
            .num("a", 1u8)
            .str("s", "x\"y\n")
            .float("f", 1.5)
            .bool("b", true)
            .nums("l", &[1, 2])
            .objs("o", &[Obj::new().num("z", 0u8)]);
        assert_eq!(
            o.to_string(),
            r#"{"a":1,"s":"x\"y\u000a","f":1.500,"b":true,"l":[1,2],"o":[{"z":0}]}"#
        );
        assert_eq!(Obj::new().float("n", f64::NAN).to_string(), r#"{"n":null}"#);
    }
}
