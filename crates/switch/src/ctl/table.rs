//! [`Table`]: the aligned text table `vecswitch ctl` prints a show into, shaped like `vppctl`'s:
//! a header row, two spaces between columns, no trailing spaces.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A text table with a header row.
#[derive(Debug, Clone)]
pub struct Table {
    head: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[(&str, Align)]) -> Table {
        Table {
            head: head.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and no trailing spaces.
    pub fn render(&self) -> String {
        let n = self.head.len();
        let mut w: Vec<usize> = self.head.iter().map(|(h, _)| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = w[i].saturating_sub(c.chars().count());
                match self.head[i].1 {
                    Align::Left => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(
            self.head.iter().map(|(h, _)| h.as_str()).collect(),
            &mut out,
        );
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), &mut out);
        }
        out
    }
}

/// `on` / `off`.
pub fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

/// A unit enum as its serde (kebab-case) name.
pub fn kebab<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Align::{Left as L, Right as R};

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&[("Name", L), ("N", R)]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["long-name".into(), "12345".into()]);
        assert_eq!(
            t.render(),
            "Name           N\na              1\nlong-name  12345\n"
        );
    }
}
