//! The signals the intent rules read, measured once on the canonical request.
//! Word lists are small and named, so a decision can be explained by pointing at
//! the list that matched; they hold the common terms of the languages clients
//! write in, and structural signals (code fences, stack traces, code-shaped
//! lines, equations) carry across languages.

use switchyard_protocol::{Message, Part, Request, Role};

use super::words::*;

/// Code evidence at or above this decides `code_text`.
pub const CODE_THRESHOLD: u32 = 3;
/// Reasoning evidence at or above this decides `reasoning_text`.
pub const REASONING_THRESHOLD: u32 = 3;
/// A task text this short (in characters) with nothing else in it is `short`.
const SHORT_CHARS: usize = 80;
/// A last user turn this short is a follow-up, read with the turn before it.
const FOLLOW_UP_CHARS: usize = 40;
/// A last user turn this short, right after one with an image, is still about
/// the image.
const REFERRED_CHARS: usize = 200;

/// What the rules saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signals {
    /// Characters of the task text: the last user turn's text, with the user
    /// turn before it when it is a short follow-up or only tool results.
    pub task_chars: usize,
    /// Messages in the conversation.
    pub turns: usize,
    /// Images in the last user turn (tool results' included).
    pub images_last: usize,
    /// No image in the last user turn, but one earlier that the last turn
    /// points at ("look at the photo again").
    pub image_referred: bool,
    /// No image in the last user turn, a short one, but one in the user turn
    /// just before it.
    pub image_recent: bool,
    /// Tool results in the last user turn.
    pub tool_results_last: usize,
    /// The tools look like a coding agent's (files, shell, edits, search).
    pub coding_tools: bool,
    /// The system prompt describes a coding agent.
    pub coding_system: bool,
    /// The last user turn is only a greeting, thanks or sign-off.
    pub small_talk: bool,
    /// The task asks for writing: a poem, an email, a summary.
    pub writing: bool,
    /// The last user turn is short and asks for no explanation, or asks for a
    /// terse answer (one word, a number, yes or no).
    pub short: bool,
    /// The last user turn asks for a terse answer by name ("just the number").
    pub terse: bool,
    /// Code evidence (see [`CODE_THRESHOLD`]).
    pub code: u32,
    /// Reasoning evidence (see [`REASONING_THRESHOLD`]).
    pub reasoning: u32,
}

impl Signals {
    /// Measure `req`.
    pub fn of(req: &Request) -> Signals {
        let users: Vec<&Message> = req.messages.iter().filter(|m| m.role == Role::User).collect();
        let last = users.last().copied();
        let mut s = Signals { turns: req.messages.len(), ..Signals::default() };
        let last_text = last.map(|m| text_of(&m.content)).unwrap_or_default();
        if let Some(m) = last {
            for part in &m.content {
                match part {
                    Part::Image(_) => s.images_last += 1,
                    Part::ToolResult(r) => {
                        s.tool_results_last += 1;
                        s.images_last +=
                            r.content.iter().filter(|p| matches!(p, Part::Image(_))).count();
                    }
                    _ => {}
                }
            }
        }
        s.coding_tools = coding_tools(req);
        let system: String =
            req.system.iter().map(|b| b.text.as_str()).collect::<Vec<_>>().join("\n");
        s.coding_system = distinct_hits(&system.to_lowercase(), CODING_SYSTEM) >= 2;
        let last_lower = last_text.trim().to_lowercase();
        s.small_talk = s.tool_results_last == 0 && is_small_talk(&last_lower);
        let task = task_of(&users, &last_text);
        let task_lower = task.to_lowercase();
        s.task_chars = text_len(task.trim());
        s.writing = is_writing(&task_lower, s.task_chars);
        s.code = code_evidence(&task, &task_lower, s.writing);
        s.reasoning = reasoning_evidence(&task, &task_lower);
        let explains = distinct_hits(&last_lower, EXPLAIN) > 0;
        s.terse = distinct_hits(&last_lower, TERSE) > 0;
        // A turn that only carries tool results is not short: the answer is
        // read from them (an order's status, a policy's clause).
        s.short = s.tool_results_last == 0
            && ((text_len(&last_lower) <= SHORT_CHARS && !explains) || s.terse);
        let image = |m: &&Message| m.content.iter().any(|p| matches!(p, Part::Image(_)));
        let no_image_now = s.images_last == 0 && s.tool_results_last == 0;
        s.image_referred = no_image_now
            && users.iter().rev().skip(1).any(image)
            && distinct_hits(&last_lower, IMAGE_WORDS) > 0;
        // A short turn right after one with an image: the talk is likely still
        // about it, where nothing else says what the turn is.
        s.image_recent = no_image_now
            && users.iter().rev().nth(1).is_some_and(image)
            && text_len(&last_lower) <= REFERRED_CHARS;
        s
    }
}

/// The task: the last user words, with the turn before them where they lean
/// on it (a follow-up) or where the turn is only tool results.
fn task_of(users: &[&Message], last_text: &str) -> String {
    let earlier =
        users.iter().rev().skip(1).map(|m| text_of(&m.content)).find(|t| !t.trim().is_empty());
    match earlier {
        Some(before) if text_len(last_text.trim()) <= FOLLOW_UP_CHARS => {
            format!("{before}\n{last_text}")
        }
        _ => last_text.to_owned(),
    }
}

/// The task text the rules read ([`Signals::task_chars`]), for a model asked
/// about the same request.
pub(crate) fn task_text(req: &Request) -> String {
    let users: Vec<&Message> = req.messages.iter().filter(|m| m.role == Role::User).collect();
    let last_text = users.last().map(|m| text_of(&m.content)).unwrap_or_default();
    task_of(&users, &last_text)
}

/// The text parts of a turn, joined.
fn text_of(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        if let Part::Text(t) = part {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&t.text);
        }
    }
    out
}

/// Whether `needle` occurs in `hay` as a word (or, for a needle with non-ASCII
/// letters such as CJK, anywhere: those scripts do not separate words).
fn has_word(hay: &str, needle: &str) -> bool {
    if !needle.is_ascii() {
        return hay.contains(needle);
    }
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(at) = hay.get(from..).and_then(|h| h.find(needle)) {
        let start = from + at;
        let end = start + needle.len();
        let before = start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
        let after = bytes.get(end).copied();
        let boundary = |b: Option<u8>| b.is_none_or(|b| !b.is_ascii_alphanumeric() && b != b'_');
        // A needle ending in a space or punctuation bounds itself.
        let open_end = needle.ends_with(|c: char| !c.is_ascii_alphanumeric());
        if boundary(before) && (open_end || boundary(after)) {
            return true;
        }
        from = start + 1;
    }
    false
}

/// How many of `list` occur in `hay` as words.
fn distinct_hits(hay: &str, list: &[&str]) -> usize {
    list.iter().filter(|w| has_word(hay, w)).count()
}

fn is_small_talk(lower: &str) -> bool {
    let cleaned: String =
        lower.chars().map(|c| if c.is_alphanumeric() || c == '\'' { c } else { ' ' }).collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    if words.is_empty() || words.len() > 8 {
        return false;
    }
    // Every word small talk, or the whole (unspaced scripts) one phrase.
    words.iter().all(|w| SMALL_TALK.contains(w))
        || SMALL_TALK_PHRASES.iter().any(|p| cleaned.trim() == *p)
}

/// A writing task: a writing verb with a piece of writing as its object
/// (`write a poem`, `draft an email`), or a summary, proofreading or rewrite of
/// a text. The object alone is not enough: "each letter is a digit".
fn is_writing(lower: &str, chars: usize) -> bool {
    (distinct_hits(lower, WRITING_VERBS) > 0 && distinct_hits(lower, WRITING_OBJECTS) > 0)
        || distinct_hits(lower, REWORKING) > 0
        || (chars > 200 && distinct_hits(lower, TRANSLATE) > 0)
}

/// A text's length as it reads: a CJK character, a kana or a hangul syllable
/// carries about as much as a short English word, so it counts three.
pub(super) fn text_len(text: &str) -> usize {
    text.chars()
        .map(|c| match c as u32 {
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF => 3,
            _ => 1,
        })
        .sum()
}

/// Whether the tools are a coding agent's: at least two (or the only one) whose
/// name has a word of [`CODING_TOOLS`] (`read_file`, `Bash`, `apply_patch`,
/// `TodoWrite`); `get_order_details` or `search_flights` have none.
fn coding_tools(req: &Request) -> bool {
    let coding = req
        .tools
        .iter()
        .filter(|t| name_words(&t.name).iter().any(|w| CODING_TOOLS.contains(&w.as_str())))
        .count();
    coding >= 2 || (coding == 1 && req.tools.len() == 1)
}

/// A tool name's words: split at `_`, `-`, `.` and where camelCase turns upper.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if (!c.is_alphanumeric() || (c.is_uppercase() && prev_lower)) && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Code evidence in the task text: its structure first (fences, traces,
/// code-shaped lines, paths), then what it asks for by name. A writing task's
/// words about code count for nothing without code in it.
fn code_evidence(text: &str, lower: &str, writing: bool) -> u32 {
    let mut structural = 0u32;
    let fences = text.matches("```").count();
    structural += match fences {
        0 => 0,
        1 => 2,
        _ => 4,
    };
    if TRACES.iter().any(|t| text.contains(t)) {
        structural += 4;
    }
    let code_lines = text.lines().filter(|l| looks_like_code(l)).count();
    structural += match code_lines {
        0 => 0,
        1 | 2 => 2,
        _ => 4,
    };
    if text.split_whitespace().any(is_code_path) {
        structural += 2;
    }
    let identifiers = text
        .split(|c: char| c.is_whitespace() || ",;\"'`".contains(c))
        .filter(|w| is_identifier_like(w))
        .count();
    structural += identifiers.min(3) as u32;
    let inline = text.split('`').skip(1).step_by(2).filter(|s| {
        !s.is_empty() && s.len() < 80 && s.contains(['(', '.', '_', '/', '-', '=', ':'])
    });
    structural += inline.take(2).count() as u32;
    if writing {
        return structural;
    }
    let asks = distinct_hits(lower, CODE_ASKS).min(2) as u32 * 2;
    let words = distinct_hits(lower, CODE_WORDS).min(3) as u32;
    structural + asks + words
}

/// A command-line flag (`--hard`, `-rf`), a snake_case name (`created_at`), or
/// a call (`customers(id`, `len()`).
fn is_identifier_like(word: &str) -> bool {
    let flag = word.len() > 2
        && word.starts_with("--")
        && word[2..].chars().all(|c| c.is_ascii_lowercase() || c == '-');
    let letters = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric());
    let snake = word.split('_').count() >= 2 && word.split('_').all(letters);
    let call = word.split_once('(').is_some_and(|(name, _)| {
        name.len() >= 2 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    });
    flag || snake || call
}

/// A line shaped like code in most languages, or a shell prompt.
fn looks_like_code(line: &str) -> bool {
    let t = line.trim();
    if t.len() < 3 {
        return false;
    }
    let ends = t.ends_with(';') || t.ends_with('{') || t == "}" || t == "};" || t.ends_with("):");
    let starts = CODE_LINE_STARTS.iter().any(|s| t.starts_with(s));
    let assigns = t.contains(" = ") && (t.contains('(') || t.ends_with(')') || t.ends_with(']'));
    let arrow = t.contains(" => ") || t.contains(" -> ");
    // An indented `key:` or `- key: value` line: YAML, the configs CI and
    // deployments are written in.
    let indented = line.starts_with("  ") || line.starts_with('\t');
    let yaml_key = t.trim_start_matches("- ").split_once(':').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    ends || starts
        || (assigns && !t.contains(". "))
        || (arrow && t.contains('('))
        || (indented && yaml_key)
}

fn is_code_path(word: &str) -> bool {
    let w = word.trim_matches(|c: char| "`'\"(),:;".contains(c));
    if CODE_FILES.iter().any(|f| w.eq_ignore_ascii_case(f)) {
        return true;
    }
    match w.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !stem.ends_with('.') => {
            CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
                && stem.chars().all(|c| c.is_ascii_alphanumeric() || "_-/.".contains(c))
        }
        _ => false,
    }
}

/// Reasoning evidence: what the task asks (proofs, probability, puzzles), how
/// it is written (equations, notation), and how constrained it is.
fn reasoning_evidence(text: &str, lower: &str) -> u32 {
    let mut score = 3 * distinct_hits(lower, REASONING_STRONG).min(2) as u32;
    score += distinct_hits(lower, REASONING_WEAK).min(2) as u32;
    let notation = MATH_NOTATION.iter().filter(|n| text.contains(*n)).count()
        + text.split_whitespace().filter(|w| is_equation(w)).count().min(3);
    if notation >= 2 {
        score += 2;
    }
    let numbers = text.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).count();
    let quantities = distinct_hits(lower, UNITS);
    if numbers >= 3
        && (distinct_hits(lower, QUANTITATIVE) > 0 || quantities >= 2)
        && text_len(text) > SHORT_CHARS
    {
        score += 2;
        // Measured quantities worked together: a physics or rates problem.
        if quantities >= 2 && numbers >= 4 {
            score += 1;
        }
    }
    let constraints = CONSTRAINTS.iter().map(|c| lower.matches(c).count()).sum::<usize>();
    // Many hard conditions to meet at once: a scheduling or planning puzzle.
    if (numbers >= 4 && constraints >= 3) || constraints >= 6 {
        score += 2;
    }
    score
}

/// `x^2`, `2x+3=7`, `f(x)`, `n!`: a word that is an expression.
fn is_equation(word: &str) -> bool {
    let has_digit = word.chars().any(|c| c.is_ascii_digit());
    let ops = word.chars().filter(|c| "=^+*/<>".contains(*c)).count();
    (has_digit && ops >= 1 && word.len() >= 3 && !word.contains("://"))
        || word.starts_with("f(")
        || (word.ends_with('!')
            && word.trim_end_matches('!').chars().all(|c| c.is_ascii_alphanumeric())
            && word.len() > 1
            && word.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && word.len() <= 4)
}

#[cfg(test)]
pub(super) fn name_words_for_tests(name: &str) -> Vec<String> {
    name_words(name)
}
