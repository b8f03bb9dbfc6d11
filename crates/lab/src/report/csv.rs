//! CSV rendering: a header of [`COLUMNS`] and one line per [`TestRecord::rows`] row, fields quoted
//! as RFC 4180 §2 asks when they contain a comma, quote or line break.
//!
//! [`TestRecord::rows`]: crate::results::TestRecord::rows

use crate::results::{RunResults, COLUMNS};

pub fn render(run: &RunResults) -> String {
    let mut out = String::new();
    out.push_str(&COLUMNS.join(","));
    out.push('\n');
    for t in &run.tests {
        for row in t.rows() {
            let fields: Vec<String> = COLUMNS
                .iter()
                .map(|c| {
                    row.get(c)
                        .map(|v| quote(&v.to_string()))
                        .unwrap_or_default()
                })
                .collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_run;

    #[test]
    fn header_and_one_line_per_row() {
        let run = sample_run();
        let text = render(&run);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header, COLUMNS);
        let rows: usize = run.tests.iter().map(|t| t.rows().len()).sum();
        assert_eq!(text.lines().count(), rows + 1);
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let first: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(first[col("id")], "phy2phy_tput");
        assert_eq!(first[col("packet_size")], "64");
        assert!(first[col("throughput_rx_fps")].parse::<f64>().unwrap() > 0.0);
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("plain"), "plain");
    }
}
