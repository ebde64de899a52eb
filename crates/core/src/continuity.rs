//! What an upstream needs back on the next turn that a client has no field for,
//! kept server-side and keyed by the tool-call id the client does carry.
//!
//! An OpenAI Chat client echoes `reasoning_content` (text) and its `tool_calls`,
//! never an Anthropic thinking signature: a tool loop with thinking on a Claude
//! upstream would lose its thinking on every turn (Anthropic then refuses it, or
//! the gateway must turn thinking off). So when an answer for such a client holds
//! signed thinking before its tool calls, the thinking is remembered under the
//! first call's id, and put back in front of that call when it comes back.
//!
//! The same holds for every client and Gemini's thought signatures: Gemini needs
//! each function call's `thoughtSignature` back with the call, and no other
//! format has a field for it. The gateway gives clients short call ids (at most 40
//! characters of `[A-Za-z0-9_-]`, so any provider takes them back) and keeps each
//! call's signature under its id; a call that comes back without one gets it
//! again on its way to Gemini. (Where it has expired, Gemini's documented rule for
//! calls without a signature applies.)
//!
//! The state lives behind [`ContinuityStore`] (in-process here; instances that
//! share state share it), each entry with a bounded lifetime: a conversation
//! resumed after it expired continues as if the thinking had been lost (Anthropic's
//! rule then applies: see `anthropic::continues_without_thinking`).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use switchyard_protocol::{BlockKind, ClientFormat, Delta, Part, Request, Role, StreamEvent};

/// A boxed future, so a store may do IO (a shared store is remote).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How long a remembered entry lives: longer than an agent's pause between turns,
/// short enough that nobody's history is kept for long.
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Key-value state with a lifetime per entry. Values are opaque bytes.
pub trait ContinuityStore: Send + Sync + std::fmt::Debug {
    /// Keep `value` under `key` for `ttl` (replacing what the key held).
    fn put(&self, key: String, value: Vec<u8>, ttl: Duration) -> BoxFuture<'_, ()>;
    /// The value kept under `key`; `None` when there is none or it expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>>;
}

/// The in-process store: a map bounded in entries (the oldest go first) and in
/// time (an expired entry is never returned; the oldest are swept as new ones
/// arrive, entries living about as long as each other).
#[derive(Debug)]
pub struct LocalContinuity {
    inner: Mutex<Local>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Local {
    /// key → (its put's sequence number, expiry, value).
    map: HashMap<String, (u64, Instant, Vec<u8>)>,
    /// Puts in order; an entry whose key was put again since is stale.
    order: VecDeque<(u64, String)>,
    next: u64,
}

impl Local {
    /// Drop the oldest put if it is still its key's latest.
    fn pop_oldest(&mut self) {
        if let Some((seq, key)) = self.order.pop_front()
            && self.map.get(&key).is_some_and(|(s, _, _)| *s == seq)
        {
            self.map.remove(&key);
        }
    }
}

impl LocalContinuity {
    /// A store of at most `capacity` entries (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self { inner: Mutex::new(Local::default()), capacity: capacity.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Local> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for LocalContinuity {
    /// Room for the thinking of 100k tool-loop turns.
    fn default() -> Self {
        Self::new(100_000)
    }
}

impl ContinuityStore for LocalContinuity {
    fn put(&self, key: String, value: Vec<u8>, ttl: Duration) -> BoxFuture<'_, ()> {
        let now = Instant::now();
        let mut local = self.lock();
        let seq = local.next;
        local.next += 1;
        local.order.push_back((seq, key.clone()));
        local.map.insert(key, (seq, now + ttl, value));
        while local.map.len() > self.capacity || local.order.len() > 2 * self.capacity {
            local.pop_oldest();
        }
        loop {
            let expired = local.order.front().is_some_and(|(seq, key)| {
                local.map.get(key).is_none_or(|(s, at, _)| s != seq || *at <= now)
            });
            if !expired {
                break;
            }
            local.pop_oldest();
        }
        Box::pin(std::future::ready(()))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>> {
        let now = Instant::now();
        let found =
            self.lock().map.get(key).filter(|(_, at, _)| *at > now).map(|(_, _, v)| v.clone());
        Box::pin(std::future::ready(found))
    }
}

/// Whether answers for this client format lose signed thinking (no field carries
/// it back): only those are remembered. (A Gemini client's thought parts carry
/// no signature; its calls come back with the ids the gateway gave them.)
pub fn needs_store(format: ClientFormat) -> bool {
    format.loses_signed_thinking()
}

/// The key of a turn's thinking: its first tool call.
fn key(call_id: &str) -> String {
    format!("thinking:{call_id}")
}

/// The key of a call's signature.
fn signature_key(call_id: &str) -> String {
    format!("signature:{call_id}")
}

/// What to remember of an answer's calls: each signature, under its call's id.
pub fn signatures_to_keep(content: &[Part]) -> Vec<(String, Vec<u8>)> {
    content
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => {
                c.signature.as_ref().map(|s| (signature_key(&c.id), s.clone().into_bytes()))
            }
            _ => None,
        })
        .collect()
}

/// Give calls in `req`'s history that came back without their signature the one
/// remembered for them (for a request that may go to Gemini).
pub async fn restore_signatures(store: &dyn ContinuityStore, req: &mut Request) {
    for m in req.messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        for p in &mut m.content {
            if let Part::ToolCall(c) = p
                && c.signature.is_none()
                && let Some(sig) = store.get(&signature_key(&c.id)).await
            {
                c.signature = String::from_utf8(sig).ok();
            }
        }
    }
}

/// Whether `req`'s history has calls without a signature (that one may exist for).
pub fn lacks_signatures(req: &Request) -> bool {
    req.messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.content)
        .any(|p| matches!(p, Part::ToolCall(c) if c.signature.is_none()))
}

/// What to remember of an answer: its signed thinking and redacted thinking, when
/// a tool call follows it (a tool loop will send the turn back), under the first
/// call's id.
pub fn thinking_to_keep(content: &[Part]) -> Option<(String, Vec<u8>)> {
    let call = content.iter().find_map(|p| match p {
        Part::ToolCall(c) => Some(c.id.as_str()),
        _ => None,
    })?;
    let thinking: Vec<&Part> = content
        .iter()
        .take_while(|p| !matches!(p, Part::ToolCall(_)))
        .filter(|p| match p {
            Part::Thinking { signature, .. } => signature.as_deref().is_some_and(|s| !s.is_empty()),
            Part::RedactedThinking { .. } => true,
            _ => false,
        })
        .collect();
    if thinking.is_empty() {
        return None;
    }
    Some((key(call), serde_json::to_vec(&thinking).ok()?))
}

/// The first tool call of each assistant turn that has no signed thinking of its
/// own: the keys whose remembered thinking [`restore`] would put back.
pub fn wanted(req: &Request) -> Vec<String> {
    let mut out = Vec::new();
    for m in req.messages.iter().filter(|m| m.role == Role::Assistant) {
        let signed = m.content.iter().any(|p| match p {
            Part::Thinking { signature, .. } => signature.as_deref().is_some_and(|s| !s.is_empty()),
            Part::RedactedThinking { .. } => true,
            _ => false,
        });
        let first_call = m.content.iter().find_map(|p| match p {
            Part::ToolCall(c) => Some(c.id.as_str()),
            _ => None,
        });
        if let (false, Some(call)) = (signed, first_call) {
            out.push(key(call));
        }
    }
    out
}

/// Put remembered thinking back: in each assistant turn whose first call's key is
/// in `found`, the thinking goes in front, replacing the unsigned thinking the
/// client echoed (the same text, without what the upstream needs).
pub fn restore(req: &mut Request, found: &HashMap<String, Vec<Part>>) {
    for m in req.messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        let first_call = m.content.iter().find_map(|p| match p {
            Part::ToolCall(c) => Some(key(&c.id)),
            _ => None,
        });
        let Some(parts) = first_call.and_then(|k| found.get(&k)) else { continue };
        m.content.retain(|p| !matches!(p, Part::Thinking { signature: None, .. }));
        let rest = std::mem::take(&mut m.content);
        m.content = parts.iter().cloned().chain(rest).collect();
    }
}

/// Look up and put back the thinking of `req`'s tool-loop turns (see the module).
pub async fn restore_from(store: &dyn ContinuityStore, req: &mut Request) {
    let mut found = HashMap::new();
    for k in wanted(req) {
        if let Some(parts) =
            store.get(&k).await.and_then(|v| serde_json::from_slice::<Vec<Part>>(&v).ok())
        {
            found.insert(k, parts);
        }
    }
    if !found.is_empty() {
        restore(req, &found);
    }
}

/// [`thinking_to_keep`] and [`signatures_to_keep`] for a stream: follows its
/// events, keeping the thinking blocks before the first tool call (when
/// `thinking`) and each call's signature.
#[derive(Debug, Default)]
pub(crate) struct StreamContinuity {
    /// Whether to keep thinking (the client cannot carry it).
    pub thinking: bool,
    kept: Vec<Part>,
    /// The thinking block being streamed: (index, text, signature).
    open: Option<(usize, String, String)>,
    first_call: Option<String>,
    /// The call blocks by index: (id, signature so far).
    calls: Vec<(usize, String, String)>,
}

impl StreamContinuity {
    pub fn new(thinking: bool) -> Self {
        Self { thinking, ..Self::default() }
    }

    pub fn push(&mut self, ev: &StreamEvent) {
        match ev {
            StreamEvent::BlockStart { index, kind: BlockKind::ToolCall { id, .. } } => {
                self.calls.push((*index, id.clone(), String::new()));
            }
            StreamEvent::Delta { index, delta: Delta::Signature { signature } } => {
                if let Some((_, _, s)) = self.calls.iter_mut().find(|(i, _, _)| i == index) {
                    s.push_str(signature);
                }
            }
            _ => {}
        }
        if !self.thinking || self.first_call.is_some() {
            return;
        }
        match ev {
            StreamEvent::BlockStart { index, kind: BlockKind::Thinking } => {
                self.open = Some((*index, String::new(), String::new()));
            }
            StreamEvent::BlockStart { kind: BlockKind::RedactedThinking { data }, .. } => {
                self.kept.push(Part::RedactedThinking { data: data.clone() });
            }
            StreamEvent::BlockStart { kind: BlockKind::ToolCall { id, .. }, .. } => {
                self.first_call = Some(id.clone());
            }
            StreamEvent::Delta { index, delta } => {
                if let Some((open, text, signature)) = &mut self.open
                    && open == index
                {
                    match delta {
                        Delta::Thinking { text: t } => text.push_str(t),
                        Delta::Signature { signature: s } => signature.push_str(s),
                        _ => {}
                    }
                }
            }
            StreamEvent::BlockStop { index } => {
                if let Some((open, text, signature)) = self.open.take() {
                    if open != *index {
                        self.open = Some((open, text, signature));
                    } else if !signature.is_empty() {
                        self.kept.push(Part::Thinking { text, signature: Some(signature) });
                    }
                }
            }
            _ => {}
        }
    }

    /// The entries to remember: the calls' signatures, and the thinking before
    /// the first call.
    pub fn finish(self) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = self
            .calls
            .into_iter()
            .filter(|(_, _, s)| !s.is_empty())
            .map(|(_, id, s)| (signature_key(&id), s.into_bytes()))
            .collect();
        if let Some(call) = self.first_call.filter(|_| !self.kept.is_empty())
            && let Ok(value) = serde_json::to_vec(&self.kept)
        {
            out.push((key(&call), value));
        }
        out
    }
}

#[cfg(test)]
#[path = "continuity_tests.rs"]
mod tests;
