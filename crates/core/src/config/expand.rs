//! `${ENV}` interpolation, and the way back from its result to the file as
//! written. Values from the environment are often secrets (provider keys,
//! passwords in URLs), so nothing that reports a problem quotes the expanded
//! text: a [`SourceMap`] moves every position back to the written text (whose
//! lines are what a snippet shows) and puts `${NAME}` back in place of any
//! variable's value a message repeats.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::ConfigError;
use crate::util::Secret;

/// The interpolated text and how it maps back.
pub(super) struct Expanded {
    pub text: String,
    /// Read by the YAML parse only (its problems name the written line).
    #[cfg_attr(not(feature = "yaml"), allow(dead_code))]
    pub map: SourceMap,
}

/// One replaced `${…}` (or `$${` escape): its bytes in the written text and in
/// the expanded text.
#[derive(Debug, Clone)]
struct Substitution {
    written: Range<usize>,
    expanded: Range<usize>,
}

/// How the interpolated text maps back to the file as written. Parse errors and
/// compile problems are reported through it: at the written line and column,
/// with snippets of the written text, and with environment values replaced by
/// the `${NAME}` they came from. Empty (the identity) for a configuration built
/// in code.
#[derive(Clone, Default)]
pub struct SourceMap {
    /// The text as written.
    written: Arc<str>,
    /// Byte offset of each line of the written text.
    written_lines: Vec<usize>,
    /// Byte offset of each line of the expanded text.
    expanded_lines: Vec<usize>,
    /// In text order.
    subs: Vec<Substitution>,
    /// Each value read from the environment and the reference that read it,
    /// longest value first (so a value containing another is replaced whole).
    secrets: Vec<(Secret, String)>,
}

// The values are secrets: show only how much is mapped.
impl fmt::Debug for SourceMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceMap")
            .field("substitutions", &self.subs.len())
            .field("variables", &self.secrets.len())
            .finish_non_exhaustive()
    }
}

/// Shorter environment values are left in messages: replacing every `on` or
/// `1` would mangle the text, and a value that short protects nothing.
const MIN_SCRUBBED: usize = 4;

/// Replace `${NAME}` and `${NAME:-default}` with environment values; `$${` is a
/// literal `${`. Comment lines are left alone. A variable that is unset and has no
/// default is an error naming the line.
pub fn interpolate(
    text: &str,
    file: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    expand(text, file, env).map(|e| e.text)
}

/// [`interpolate`], recording where each replacement came from.
pub(super) fn expand(
    text: &str,
    file: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Expanded, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut subs = Vec::new();
    let mut secrets = Vec::new();
    let mut line_start = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let this_line = line_start;
        line_start += line.len();
        if line.trim_start().starts_with('#') {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(pos) = rest.find('$') {
            out.push_str(&rest[..pos]);
            // Where the `$` is in the written text.
            let at = this_line + (line.len() - rest.len()) + pos;
            let after = &rest[pos..];
            if let Some(tail) = after.strip_prefix("$${") {
                let start = out.len();
                out.push_str("${");
                subs.push(Substitution { written: at..at + 3, expanded: start..out.len() });
                rest = tail;
            } else if let Some(tail) = after.strip_prefix("${") {
                let end = tail.find('}').ok_or_else(|| ConfigError::Interpolation {
                    file: file.to_owned(),
                    line: n + 1,
                    message: "unclosed `${`".to_owned(),
                })?;
                let expr = &tail[..end];
                let (name, default) = match expr.split_once(":-") {
                    Some((name, default)) => (name, Some(default)),
                    None => (expr, None),
                };
                let valid =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid {
                    return Err(ConfigError::Interpolation {
                        file: file.to_owned(),
                        line: n + 1,
                        message: format!("`${{{expr}}}` is not a valid variable reference"),
                    });
                }
                let start = out.len();
                match env(name).filter(|v| !v.is_empty()) {
                    Some(value) => {
                        out.push_str(&value);
                        secrets.push((Secret::new(value), format!("${{{name}}}")));
                    }
                    // A default is written in the file: no secret.
                    None => match default {
                        Some(d) => out.push_str(d),
                        None => {
                            return Err(ConfigError::Interpolation {
                                file: file.to_owned(),
                                line: n + 1,
                                message: format!(
                                    "environment variable {name} is not set (write `${{{name}:-}}` to allow that)"
                                ),
                            });
                        }
                    },
                }
                // `${…}` closes on its own line: `end` is within `tail`.
                let written_end = at + 2 + end + 1;
                subs.push(Substitution { written: at..written_end, expanded: start..out.len() });
                rest = &tail[end + 1..];
            } else {
                out.push('$');
                rest = &after[1..];
            }
        }
        out.push_str(rest);
    }
    secrets.sort_by_key(|(value, _)| std::cmp::Reverse(value.expose().len()));
    let map = SourceMap {
        written: Arc::from(text),
        written_lines: line_starts(text),
        expanded_lines: line_starts(&out),
        subs,
        secrets,
    };
    Ok(Expanded { text: out, map })
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

impl SourceMap {
    /// The written byte offset of an expanded one. A position inside a
    /// replaced value is the `${` that produced it.
    fn written_offset(&self, expanded: usize) -> usize {
        let i = self.subs.partition_point(|s| s.expanded.start <= expanded);
        let written = match i.checked_sub(1).and_then(|i| self.subs.get(i)) {
            None => expanded,
            Some(s)
                if expanded < s.expanded.end
                    || (s.expanded.is_empty() && expanded == s.expanded.start) =>
            {
                s.written.start
            }
            Some(s) => expanded - s.expanded.end + s.written.end,
        };
        written.min(self.written.len())
    }

    /// The written line (from 1) holding a written byte offset.
    fn written_line_of(&self, offset: usize) -> usize {
        self.written_lines.partition_point(|&start| start <= offset).max(1)
    }

    /// The written line of an expanded line (both from 1). Lines differ only
    /// after a value with a line break in it; the lines of such a value are the
    /// line of its `${`.
    pub fn written_line(&self, expanded_line: u64) -> u64 {
        let index = usize::try_from(expanded_line).ok().and_then(|l| l.checked_sub(1));
        match index.and_then(|i| self.expanded_lines.get(i)) {
            Some(&start) if !self.subs.is_empty() => {
                self.written_line_of(self.written_offset(start)) as u64
            }
            _ => expanded_line,
        }
    }

    /// The written line and column (from 1, the column in characters, as
    /// serde-saphyr counts) of an expanded byte offset.
    #[cfg(feature = "yaml")]
    fn written_position(&self, expanded: usize) -> (usize, usize) {
        let offset = self.written_offset(expanded);
        let line = self.written_line_of(offset);
        let start = self.written_lines.get(line - 1).copied().unwrap_or(0);
        let column = self.written.get(start..offset).map_or(0, |s| s.chars().count()) + 1;
        (line, column)
    }

    /// `text` with every environment value put back as the `${NAME}` that read
    /// it (its Debug-escaped form too, which `{:?}` messages quote).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (value, reference) in &self.secrets {
            let value = value.expose();
            if value.chars().count() < MIN_SCRUBBED {
                continue;
            }
            let escaped = value.escape_debug().to_string();
            for form in [value, escaped.as_str()] {
                if out.contains(form) {
                    out = out.replace(form, reference);
                }
            }
        }
        out
    }

    /// A serde-saphyr error on the expanded text, reported against the written
    /// text: `file:line:column: message` and a snippet of the lines as written.
    #[cfg(feature = "yaml")]
    pub(super) fn parse_error(
        &self,
        file: &str,
        expanded: &str,
        err: &serde_saphyr::Error,
    ) -> ConfigError {
        use serde_saphyr::MessageFormatter as _;
        let message = serde_saphyr::DefaultMessageFormatter.format_message(err);
        let message = printable(&self.scrub(&message));
        let at = err.location().filter(|l| l.line() > 0).map(|l| {
            let offset = match l.span().byte_offset().and_then(|o| usize::try_from(o).ok()) {
                Some(o) => o,
                None => char_offset(expanded, &self.expanded_lines, l.line(), l.column()),
            };
            self.written_position(offset.min(expanded.len()))
        });
        let snippet = at.map(|(line, column)| self.snippet(line, column)).unwrap_or_default();
        ConfigError::Parse {
            file: file.to_owned(),
            line: at.map(|(l, _)| l),
            column: at.map(|(_, c)| c),
            message,
            snippet,
        }
    }

    /// Two lines either side of `line` as written, a caret under `column`.
    #[cfg(feature = "yaml")]
    fn snippet(&self, line: usize, column: usize) -> String {
        let first = line.saturating_sub(2).max(1);
        // A final line break starts no line of its own.
        let lines = self.written_lines.len() - usize::from(self.written.ends_with('\n'));
        let last = (line + 2).min(lines).max(line);
        let width = last.to_string().len();
        let mut out = format!("\n{:width$} |\n", "");
        for n in first..=last {
            let start = self.written_lines.get(n - 1).copied().unwrap_or(0);
            let end = self.written_lines.get(n).copied().unwrap_or(self.written.len());
            let text = self.written.get(start..end).unwrap_or_default();
            let text = printable(text.trim_end_matches(['\n', '\r']));
            out.push_str(&format!("{n:>width$} | {text}\n"));
            if n == line {
                out.push_str(&format!("{:width$} | {:pad$}^\n", "", "", pad = column - 1));
            }
        }
        out
    }
}

/// The byte offset of a 1-based line and character column.
#[cfg(feature = "yaml")]
fn char_offset(text: &str, lines: &[usize], line: u64, column: u64) -> usize {
    let index = usize::try_from(line).unwrap_or(usize::MAX).saturating_sub(1);
    let Some(&start) = lines.get(index) else { return text.len() };
    let skip = usize::try_from(column).unwrap_or(0).saturating_sub(1);
    let rest = text.get(start..).unwrap_or_default();
    start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i)
}

/// One printable character for each control character (a tab is a space), so
/// a snippet cannot drive the terminal and its caret stays under its column.
#[cfg(feature = "yaml")]
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "expand_tests.rs"]
mod tests;
