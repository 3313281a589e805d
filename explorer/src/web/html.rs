//! HTML building blocks: escaping, the page layout, tables, links and values with their units
//! (GPU amounts rather than raw ugpu, MiB, blocks and seconds).

use std::fmt::Write;

use gpuchain_types::Address;

/// Escapes text for HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// ugpu as GPU with up to six decimals, e.g. `1.5 GPU`, `0.000120 GPU` → `0.00012 GPU`.
pub fn gpu(ugpu: u128) -> String {
    let whole = ugpu / 1_000_000;
    let frac = ugpu % 1_000_000;
    if frac == 0 {
        format!("{} GPU", thousands(whole))
    } else {
        let digits = format!("{frac:06}");
        format!("{}.{} GPU", thousands(whole), digits.trim_end_matches('0'))
    }
}

/// An integer with thin thousands separators (`1,234,567`).
pub fn thousands(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Memory in MiB, with GiB beside it when it is a whole number of them.
pub fn mib(v: u64) -> String {
    if v == 0 {
        "—".to_string()
    } else if v % 1024 == 0 {
        format!("{} MiB ({} GiB)", thousands(u128::from(v)), v / 1024)
    } else {
        format!("{} MiB", thousands(u128::from(v)))
    }
}

/// A ppm fraction as a percentage with one decimal.
pub fn percent(ppm: u64) -> String {
    format!("{}.{}%", ppm / 10_000, (ppm / 1_000) % 10)
}

/// `height` as a link to its block.
pub fn height_link(height: u64) -> String {
    format!(
        "<a href=\"/blocks/{height}\">{}</a>",
        thousands(u128::from(height))
    )
}

/// How long before `head` a height was: `3 blocks ago`.
pub fn blocks_ago(height: u64, head: u64) -> String {
    match head.saturating_sub(height) {
        0 => "this block".to_string(),
        1 => "1 block ago".to_string(),
        n => format!("{} blocks ago", thousands(u128::from(n))),
    }
}

/// Seconds as `42 s`, `3 min 5 s`, `2 h 10 min`.
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}

/// An address shortened to `gpu1abcd…wxyz`, linked to `base/<address>`, with a copy button.
pub fn addr_at(base: &str, address: &str) -> String {
    let short = if address.len() > 16 {
        format!("{}…{}", &address[..9], &address[address.len() - 5..])
    } else {
        address.to_string()
    };
    format!(
        "<span class=\"addr\"><a href=\"{base}/{a}\" title=\"{a}\">{s}</a>\
         <button type=\"button\" class=\"copy\" data-copy=\"{a}\" title=\"copy {a}\" \
         aria-label=\"copy address\">copy</button></span>",
        a = esc(address),
        s = esc(&short)
    )
}

/// An account address linked to its account page.
pub fn addr(address: &Address) -> String {
    addr_at("/accounts", &address.to_string())
}

/// A hash shortened to its first 12 and last 4 digits, linked.
pub fn hash_link(base: &str, hash: &str) -> String {
    let short = if hash.len() > 20 {
        format!("{}…{}", &hash[..12], &hash[hash.len() - 4..])
    } else {
        hash.to_string()
    };
    format!(
        "<a class=\"hash\" href=\"{base}/{h}\" title=\"{h}\">{s}</a>",
        h = esc(hash),
        s = esc(&short)
    )
}

/// A small table: header cells (already HTML), rows of cells (already HTML). An empty table
/// shows `empty` instead, which should say what would fill it.
pub fn table(id: &str, headers: &[String], rows: &[Vec<String>], empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\" id=\"{id}-empty\">{}</p>", esc(empty));
    }
    let mut out = format!("<table id=\"{id}\"><thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// Percent-encodes a query-string value (everything but unreserved characters).
pub fn query_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Rows shown per page of a long table.
pub const PER_PAGE: usize = 100;

/// The 1-based page asked for in `?page=`, or why it is not one.
pub fn page_number(q: &std::collections::BTreeMap<String, String>) -> Result<usize, String> {
    match q.get("page").map(|p| p.trim()).filter(|p| !p.is_empty()) {
        None => Ok(1),
        Some(p) => p
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("page must be a whole number from 1, not {p:?}")),
    }
}

/// The range of `total` rows page `page` shows.
pub fn page_range(page: usize, total: usize) -> std::ops::Range<usize> {
    let start = page.saturating_sub(1).saturating_mul(PER_PAGE).min(total);
    start..start.saturating_add(PER_PAGE).min(total)
}

/// Links to the previous and next pages of a table of `total` rows; `link(n)` is page n's URL.
pub fn pager(id: &str, page: usize, total: usize, link: impl Fn(usize) -> String) -> String {
    let pages = total.div_ceil(PER_PAGE).max(1);
    if pages == 1 {
        return String::new();
    }
    let mut out = format!("<p class=\"pager\" id=\"{id}\">");
    if page > 1 {
        let _ = write!(
            out,
            "<a rel=\"prev\" href=\"{}\">← previous</a> ",
            esc(&link(page - 1))
        );
    }
    let _ = write!(out, "page {page} of {pages}");
    if page < pages {
        let _ = write!(
            out,
            " <a rel=\"next\" href=\"{}\">next →</a>",
            esc(&link(page + 1))
        );
    }
    out.push_str("</p>");
    out
}

/// A definition list of (label, value HTML) pairs.
pub fn facts(pairs: &[(&str, String)]) -> String {
    let mut out = String::from("<dl class=\"facts\">");
    for (k, v) in pairs {
        let _ = write!(out, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    }
    out.push_str("</dl>");
    out
}

/// A line chart, drawn by the page's script with uPlot from `series`: one line per
/// `(label, [(x, y)])`, x labelled `x_label`, y `y_label`.
pub fn chart(
    id: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(u64, f64)>)],
) -> String {
    if series.iter().all(|(_, points)| points.is_empty()) {
        return String::new();
    }
    let data = serde_json::json!({
        "x": x_label,
        "y": y_label,
        "series": series.iter().map(|(label, points)| serde_json::json!({
            "label": label,
            "points": points,
        })).collect::<Vec<_>>(),
    });
    format!(
        "<div class=\"chart\" id=\"{id}\" data-chart=\"{}\"><noscript>charts need JavaScript</noscript></div>",
        esc(&data.to_string())
    )
}

/// Navigation entries: (path, label).
const NAV: [(&str, &str); 6] = [
    ("/", "Overview"),
    ("/providers", "Providers"),
    ("/market", "Market"),
    ("/verification", "Verification"),
    ("/blocks", "Blocks"),
    ("/validators", "Validators"),
];

/// The whole document: head, navigation with the search box and the live height, `body`.
pub fn layout(title: &str, active: &str, chain_id: &str, head: u64, body: &str) -> String {
    let mut nav = String::new();
    for (path, label) in NAV {
        let class = if path == active {
            " class=\"active\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{path}\"{class}>{label}</a>");
    }
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · gpuchain explorer</title>\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\
         <link rel=\"stylesheet\" href=\"/assets/uPlot.min.css\">\
         <script defer src=\"/assets/uPlot.iife.min.js\"></script>\
         <script defer src=\"/assets/app.js\"></script></head><body>\
         <header><a class=\"brand\" href=\"/\">gpuchain</a><nav>{nav}</nav>\
         <form class=\"search\" action=\"/search\" method=\"get\" role=\"search\">\
         <input id=\"search\" name=\"q\" placeholder=\"address, order, lease, tx hash or height\" \
         aria-label=\"search\"><button type=\"submit\">Search</button></form>\
         <span class=\"live\" title=\"the page follows new blocks\">{chain} · height \
         <span id=\"head-height\">{head}</span></span></header>\
         <main><h1>{title}</h1><div id=\"live\">{body}</div></main></body></html>",
        title = esc(title),
        chain = esc(chain_id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_shown_in_gpu_with_their_decimals() {
        assert_eq!(gpu(0), "0 GPU");
        assert_eq!(gpu(1_000_000_000), "1,000 GPU");
        assert_eq!(gpu(1_500_000), "1.5 GPU");
        assert_eq!(gpu(120), "0.00012 GPU");
        assert_eq!(gpu(1_234_567_890_123), "1,234,567.890123 GPU");
    }

    #[test]
    fn memory_percentages_and_ages_carry_units() {
        assert_eq!(mib(0), "—");
        assert_eq!(mib(81_920), "81,920 MiB (80 GiB)");
        assert_eq!(mib(24_564), "24,564 MiB");
        assert_eq!(percent(987_654), "98.7%");
        assert_eq!(blocks_ago(10, 10), "this block");
        assert_eq!(blocks_ago(9, 10), "1 block ago");
        assert_eq!(blocks_ago(1, 1_001), "1,000 blocks ago");
        assert_eq!(duration(3_725), "1 h 2 min");
    }

    #[test]
    fn text_from_the_chain_cannot_inject_markup() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        let cell = addr_at("/providers", "gpu1\"><script>");
        assert!(!cell.contains("<script>"), "{cell}");
        let page = layout("<b>", "/", "chain<", 3, "");
        assert!(page.contains("&lt;b&gt;") && page.contains("chain&lt;"));
    }
}
