//! A small JSON Schema validator: what prompted structured output checks an
//! answer with. It covers the subset the providers' structured-output APIs
//! take (OpenAI strict mode, Gemini's `responseSchema`, Anthropic's tool
//! schemas), since that is what clients write:
//!
//! - `type` (a name or a list; `integer` is a number with no fraction, so `1.0`
//!   is one), OpenAPI's `nullable: true`;
//! - `enum`, `const` (numbers compare by value: `1` equals `1.0`);
//! - `properties`, `required`, `additionalProperties` (a boolean or a schema),
//!   `minProperties`, `maxProperties`;
//! - `items`, `prefixItems` (and the older array form of `items` with
//!   `additionalItems`), `minItems`, `maxItems`, `uniqueItems`;
//! - `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or
//!   draft 4's booleans), `multipleOf`;
//! - `minLength`, `maxLength` (in characters, not bytes);
//! - `anyOf`, `oneOf`, `allOf`, `not`, `if` / `then` / `else`;
//! - `$ref` to a JSON pointer inside the schema (`#`, `#/$defs/…`,
//!   `#/definitions/…`), recursion bounded by [`MAX_DEPTH`].
//!
//! Everything else is ignored, so a schema using it passes more answers than it
//! should, never fewer: `pattern` and `patternProperties` (there is no regex
//! engine in the gateway; with `patternProperties` present,
//! `additionalProperties` is not applied either, since it cannot tell which
//! names the patterns cover), `format`, `contains`, `propertyNames`,
//! `dependent*`, `unevaluated*`, and a `$ref` that does not resolve inside the
//! schema (a URL): a schema's own gap is the client's, and failing every
//! answer over it would fail every deployment over too.
//!
//! The first violation found is reported, with the JSON pointer (RFC 6901) of
//! the value at fault; pointers and quoted names are bounded in length, and a
//! value the answer holds is never quoted whole.

use std::fmt;

use serde_json::{Map, Value};

/// The deepest a value is checked through nested schemas (each `$ref` hop, each
/// combinator and each property or item counts one): bounds a `$ref` that
/// refers to itself without consuming the value (`{"$ref": "#"}`) and the stack
/// a hostile schema can take. A real answer is far shallower: JSON is parsed
/// at most 128 levels deep.
pub const MAX_DEPTH: usize = 256;

/// The most characters of a pointer or a name a message quotes.
const MAX_SHOWN: usize = 120;

/// Where an answer first breaks its schema, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The JSON pointer of the value at fault (`/items/0/name`); empty for the
    /// whole answer. Its tail only, after `…`, when it is long.
    pub path: String,
    /// What is wrong with it (`expected string, got number`).
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at the root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

/// Check `value` against `schema`; the first violation found, if any.
pub fn validate(schema: &Value, value: &Value) -> Result<(), Violation> {
    Checker { root: schema }.check(schema, value, &mut Vec::new(), 0)
}

/// One step of the path to the value being checked; borrowed from the value,
/// so a pointer is built only for a violation.
#[derive(Debug, Clone, Copy)]
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// The JSON pointer of `path`, its tail only when long.
fn pointer(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        match seg {
            Seg::Key(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => out.push_str(&i.to_string()),
        }
    }
    let n = out.chars().count();
    if n <= MAX_SHOWN {
        return out;
    }
    let tail: String = out.chars().skip(n - MAX_SHOWN).collect();
    format!("…{tail}")
}

/// `s` quoted, cut to [`MAX_SHOWN`] characters.
fn quoted(s: &str) -> String {
    if s.chars().count() <= MAX_SHOWN {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(MAX_SHOWN).collect();
    format!("{head:?}…")
}

/// The most characters of a message (an `anyOf`'s quotes its first branch's,
/// which may quote its own).
const MAX_MESSAGE: usize = 400;

fn fail(path: &[Seg<'_>], message: impl Into<String>) -> Violation {
    let mut message = message.into();
    if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE) {
        message.truncate(cut);
        message.push('…');
    }
    Violation { path: pointer(path), message }
}

/// A value's type as messages name it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A number with no fractional part (`1.0` included, as JSON Schema says).
fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// Whether `v` is of the JSON Schema type `name`; a name the validator does
/// not know is not its to refuse.
fn is_type(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        _ => true,
    }
}

/// JSON equality as JSON Schema has it: numbers by value (`1` is `1.0`).
pub(super) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64().zip(y.as_f64()).is_some_and(|(p, q)| p == q),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| equal(p, q)))
        }
        _ => a == b,
    }
}

/// A keyword's value as a count (`minItems: 2`); `None` when absent or not one.
fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    let v = schema.get(key)?;
    v.as_u64().or_else(|| v.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
}

fn number(schema: &Map<String, Value>, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

/// `values` compacted for a message, cut short when long.
fn shown_values(values: &[Value]) -> String {
    let all = Value::Array(values.to_vec()).to_string();
    if all.chars().count() <= MAX_SHOWN {
        return all;
    }
    let head: String = all.chars().take(MAX_SHOWN).collect();
    format!("{head}…")
}

struct Checker<'s> {
    /// The whole schema, which `$ref` pointers are resolved in.
    root: &'s Value,
}

impl<'s> Checker<'s> {
    fn check<'v>(
        &self,
        schema: &'s Value,
        value: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> Result<(), Violation> {
        if depth > MAX_DEPTH {
            return Err(fail(
                path,
                format!("the schema nests deeper than {MAX_DEPTH} levels here (a $ref loop?)"),
            ));
        }
        let s = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                return Err(fail(path, "no value is allowed here (schema false)"));
            }
            Value::Object(s) => s,
            // Not a schema: nothing it could say.
            _ => return Ok(()),
        };
        if let Some(target) = s.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
            self.check(target, value, path, depth + 1)?;
        }
        self.check_type(s, value, path)?;
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.iter().any(|o| equal(o, value))
        {
            return Err(fail(
                path,
                format!("not one of the values enum allows: {}", shown_values(options)),
            ));
        }
        if let Some(c) = s.get("const")
            && !equal(c, value)
        {
            return Err(fail(
                path,
                format!("not the value const requires: {}", shown_values(std::slice::from_ref(c))),
            ));
        }
        match value {
            Value::Number(_) => check_number(s, value, path)?,
            Value::String(text) => check_string(s, text, path)?,
            Value::Array(items) => self.check_array(s, items, path, depth)?,
            Value::Object(members) => self.check_object(s, members, path, depth)?,
            Value::Null | Value::Bool(_) => {}
        }
        self.check_combinators(s, value, path, depth)
    }

    /// A `$ref` inside the schema: `#` or a JSON pointer after it. Anything
    /// else (a URL, an anchor) is not followed.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        let mut at = self.root;
        for token in pointer.strip_prefix('/')?.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Object(m) => m.get(&token)?,
                Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at)
    }

    fn check_type(
        &self,
        s: &Map<String, Value>,
        value: &Value,
        path: &[Seg<'_>],
    ) -> Result<(), Violation> {
        let nullable = s.get("nullable") == Some(&Value::Bool(true)) && value.is_null();
        let names: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => return Ok(()),
        };
        if nullable || names.is_empty() || names.iter().any(|t| is_type(t, value)) {
            return Ok(());
        }
        let expected = match names.as_slice() {
            [one] => (*one).to_owned(),
            many => format!("one of {}", many.join(", ")),
        };
        Err(fail(path, format!("expected {expected}, got {}", type_name(value))))
    }

    fn check_array<'v>(
        &self,
        s: &'s Map<String, Value>,
        items: &'v [Value],
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> Result<(), Violation> {
        let n = items.len() as u64;
        if let Some(min) = count(s, "minItems").filter(|m| n < *m) {
            return Err(fail(path, format!("{n} items, fewer than minItems {min}")));
        }
        if let Some(max) = count(s, "maxItems").filter(|m| n > *m) {
            return Err(fail(path, format!("{n} items, more than maxItems {max}")));
        }
        // The tuple's schemas (`prefixItems`, or draft 7's array form of
        // `items`), then the schema of the items after them.
        let (prefix, rest) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(p)), rest) => (p.as_slice(), rest),
            (_, Some(Value::Array(p))) => (p.as_slice(), s.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        for (i, item) in items.iter().enumerate() {
            let schema = match prefix.get(i) {
                Some(schema) => schema,
                None => match rest {
                    Some(schema) => schema,
                    None => break,
                },
            };
            path.push(Seg::Index(i));
            self.check(schema, item, path, depth + 1)?;
            path.pop();
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, a) in items.iter().enumerate() {
                if let Some(j) = items.iter().skip(i + 1).position(|b| equal(a, b)) {
                    let j = i + 1 + j;
                    return Err(fail(path, format!("items {i} and {j} are equal (uniqueItems)")));
                }
            }
        }
        Ok(())
    }

    fn check_object<'v>(
        &self,
        s: &'s Map<String, Value>,
        members: &'v Map<String, Value>,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> Result<(), Violation> {
        let n = members.len() as u64;
        if let Some(min) = count(s, "minProperties").filter(|m| n < *m) {
            return Err(fail(path, format!("{n} properties, fewer than minProperties {min}")));
        }
        if let Some(max) = count(s, "maxProperties").filter(|m| n > *m) {
            return Err(fail(path, format!("{n} properties, more than maxProperties {max}")));
        }
        if let Some(Value::Array(required)) = s.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !members.contains_key(name) {
                    return Err(fail(
                        path,
                        format!("the required property {} is missing", quoted(name)),
                    ));
                }
            }
        }
        let properties = match s.get("properties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        // Names the patterns cover cannot be told apart: no additionalProperties.
        let additional =
            s.get("additionalProperties").filter(|_| !s.contains_key("patternProperties"));
        for (name, member) in members {
            let schema = match properties.and_then(|p| p.get(name)) {
                Some(schema) => schema,
                None => match additional {
                    Some(Value::Bool(false)) => {
                        path.push(Seg::Key(name));
                        return Err(fail(
                            path,
                            format!(
                                "the property {} is not allowed (additionalProperties: false)",
                                quoted(name)
                            ),
                        ));
                    }
                    Some(schema) => schema,
                    None => continue,
                },
            };
            path.push(Seg::Key(name));
            self.check(schema, member, path, depth + 1)?;
            path.pop();
        }
        Ok(())
    }

    fn check_combinators<'v>(
        &self,
        s: &'s Map<String, Value>,
        value: &'v Value,
        path: &mut Vec<Seg<'v>>,
        depth: usize,
    ) -> Result<(), Violation> {
        if let Some(Value::Array(all)) = s.get("allOf") {
            for schema in all {
                self.check(schema, value, path, depth + 1)?;
            }
        }
        if let Some(Value::Array(any)) = s.get("anyOf") {
            let mut first = None;
            for schema in any {
                match self.check(schema, value, &mut path.clone(), depth + 1) {
                    Ok(()) => {
                        first = None;
                        break;
                    }
                    Err(v) => {
                        first.get_or_insert(v);
                    }
                }
            }
            if let Some(v) = first {
                let n = any.len();
                return Err(fail(
                    path,
                    format!("matches none of the {n} schemas of anyOf (the first: {v})"),
                ));
            }
        }
        if let Some(Value::Array(one)) = s.get("oneOf") {
            let mut matched = 0usize;
            let mut first = None;
            for schema in one {
                match self.check(schema, value, &mut path.clone(), depth + 1) {
                    Ok(()) => matched += 1,
                    Err(v) => {
                        first.get_or_insert(v);
                    }
                }
            }
            match (matched, first) {
                (1, _) => {}
                (0, Some(v)) => {
                    let n = one.len();
                    return Err(fail(
                        path,
                        format!("matches none of the {n} schemas of oneOf (the first: {v})"),
                    ));
                }
                (0, None) => {}
                (m, _) => {
                    return Err(fail(
                        path,
                        format!("matches {m} of the schemas of oneOf, not exactly one"),
                    ));
                }
            }
        }
        if let Some(not) = s.get("not")
            && self.check(not, value, &mut path.clone(), depth + 1).is_ok()
        {
            return Err(fail(path, "matches the schema of not"));
        }
        if let Some(cond) = s.get("if") {
            let branch = if self.check(cond, value, &mut path.clone(), depth + 1).is_ok() {
                s.get("then")
            } else {
                s.get("else")
            };
            if let Some(schema) = branch {
                self.check(schema, value, path, depth + 1)?;
            }
        }
        Ok(())
    }
}

fn check_number(s: &Map<String, Value>, value: &Value, path: &[Seg<'_>]) -> Result<(), Violation> {
    let Some(x) = value.as_f64() else { return Ok(()) };
    // Draft 4 writes an exclusive bound as a boolean beside `minimum`/`maximum`.
    let exclusive = |key: &str| s.get(key) == Some(&Value::Bool(true));
    if let Some(min) = number(s, "minimum") {
        if exclusive("exclusiveMinimum") && x <= min {
            return Err(fail(path, format!("{x} is not above the exclusive minimum {min}")));
        }
        if x < min {
            return Err(fail(path, format!("{x} is below the minimum {min}")));
        }
    }
    if let Some(max) = number(s, "maximum") {
        if exclusive("exclusiveMaximum") && x >= max {
            return Err(fail(path, format!("{x} is not below the exclusive maximum {max}")));
        }
        if x > max {
            return Err(fail(path, format!("{x} is above the maximum {max}")));
        }
    }
    if let Some(min) = number(s, "exclusiveMinimum").filter(|m| x <= *m) {
        return Err(fail(path, format!("{x} is not above the exclusive minimum {min}")));
    }
    if let Some(max) = number(s, "exclusiveMaximum").filter(|m| x >= *m) {
        return Err(fail(path, format!("{x} is not below the exclusive maximum {max}")));
    }
    if let Some(m) = number(s, "multipleOf").filter(|m| *m > 0.0)
        && !is_multiple(value, x, s.get("multipleOf"), m)
    {
        return Err(fail(path, format!("{x} is not a multiple of {m}")));
    }
    Ok(())
}

/// Whether `x` is a multiple of `m`: exactly for integers, within a relative
/// tolerance otherwise (`0.3` is a multiple of `0.1`, which binary floating
/// point alone would deny).
fn is_multiple(value: &Value, x: f64, divisor: Option<&Value>, m: f64) -> bool {
    if let (Some(a), Some(b)) = (value.as_i64(), divisor.and_then(Value::as_i64))
        && b != 0
    {
        return a % b == 0;
    }
    let q = x / m;
    q.is_finite() && (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
}

fn check_string(s: &Map<String, Value>, text: &str, path: &[Seg<'_>]) -> Result<(), Violation> {
    let (min, max) = (count(s, "minLength"), count(s, "maxLength"));
    if min.is_none() && max.is_none() {
        return Ok(());
    }
    let n = text.chars().count() as u64;
    if let Some(min) = min.filter(|m| n < *m) {
        return Err(fail(path, format!("{n} characters, fewer than minLength {min}")));
    }
    if let Some(max) = max.filter(|m| n > *m) {
        return Err(fail(path, format!("{n} characters, more than maxLength {max}")));
    }
    Ok(())
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
