//! Who may call what. The caller is a [`Principal`] (resolved from their API key);
//! access rules grant or deny model/route patterns to roles, groups, projects or
//! users. Default: every model open to every signed-in role. Rules come from the
//! configuration file (`access_rules:`) and from the database (admin API).
//!
//! Decision: among the rules whose subject matches the caller and whose pattern
//! matches the model id (or the route id), the highest `priority` wins; on a tie a
//! deny beats an allow; no matching rule means allowed. A key restricted to some
//! models (`allowed_models`) refuses every other model.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::util::glob_match;

/// A user's role. Every role may use every model unless a rule says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallerRole {
    /// May also use the admin API (the bootstrap admin key has this role).
    Admin,
    /// The default for new users; static gateway keys act as one.
    Member,
    /// A member's rights, and reading `/metrics`; a role rules can single out.
    Viewer,
}

impl CallerRole {
    /// `admin`, `member` or `viewer` (the serialized form).
    pub fn as_str(self) -> &'static str {
        match self {
            CallerRole::Admin => "admin",
            CallerRole::Member => "member",
            CallerRole::Viewer => "viewer",
        }
    }

    /// The role [`CallerRole::as_str`] names; `None` for anything else.
    pub fn parse(s: &str) -> Option<CallerRole> {
        match s {
            "admin" => Some(CallerRole::Admin),
            "member" => Some(CallerRole::Member),
            "viewer" => Some(CallerRole::Viewer),
            _ => None,
        }
    }
}

/// The authenticated caller. Built with [`Principal::anonymous`] or
/// [`Principal::user`] and the setters below; the fields are public for reading,
/// and more may come (hence `#[non_exhaustive]`: a struct literal outside this
/// crate would break when one does).
///
/// ```
/// use switchyard_core::embed::{CallerRole, Principal};
///
/// let ann = Principal::user("u-ann")
///     .role(CallerRole::Member)
///     .email("ann@example.com")
///     .groups(["research"])
///     .project("p-1")
///     .project_names([("p-1", "storefront")])
///     .key("k-7", "sy-ab12")
///     .allowed_models(["gpt-*"]);
/// assert_eq!(ann.user_id.as_deref(), Some("u-ann"));
/// assert_eq!(ann.project_id("storefront"), Some("p-1"));
/// assert_eq!(ann.key_prefix.as_deref(), Some("sy-ab12"));
/// assert_eq!(Principal::anonymous(), Principal::default());
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Principal {
    /// The signed-in user's id; `None` for a static key or an anonymous caller.
    pub user_id: Option<String>,
    /// `None`: anonymous (an open gateway, a library caller by default).
    pub role: Option<CallerRole>,
    /// The user's groups, which rules may name.
    pub groups: Vec<String>,
    /// The project the key is bound to, else the user's primary project.
    pub project: Option<String>,
    /// Other projects the user belongs to.
    pub projects: Vec<String>,
    /// `(id, name)` of the projects above, so that rules, the project header and
    /// per-project chains may name a project by its name as well as its id.
    pub project_names: Vec<(String, String)>,
    /// The user's email (rules may name a user by it).
    pub email: Option<String>,
    /// The stored API key's id (`None` for static keys and anonymous callers).
    pub key_id: Option<String>,
    /// The visible prefix of the key presented, for records (never the key).
    pub key_prefix: Option<String>,
    /// A digest of the presented key ([`crate::stored_responses::key_digest`]):
    /// whose server-side state (stored responses) a request reads and writes.
    pub key_digest: Option<String>,
    /// Model patterns this key is limited to (None: no limit).
    pub allowed_models: Option<Vec<String>>,
    /// The key's own rate limits (None: none of its own).
    pub limits: Option<crate::limits::Limits>,
    /// The key's own routing policy, where it pins one (per-application policy).
    pub key_policy: Option<Arc<crate::app_policy::Pinned>>,
    /// The routing policies the projects above pin, by project id.
    pub project_policies: Vec<(String, Arc<crate::app_policy::Pinned>)>,
}

/// What a rule does when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// The request may go on.
    Allow,
    /// The request is refused (403) with the rule's reason.
    Deny,
}

/// Whom a rule applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Subject {
    /// Every caller, anonymous ones included.
    Any,
    /// Callers with this role.
    Role(CallerRole),
    /// Members of this group.
    Group(String),
    /// Callers with this project (attributed or a membership), by id or name.
    Project(String),
    /// This user, by id, or by email (case-insensitive).
    User(String),
}

/// One access rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Its name, which a denial quotes.
    pub name: String,
    /// Allow or deny.
    pub effect: Effect,
    /// Glob over the model id or the route id.
    pub pattern: String,
    /// Whom it applies to.
    pub subject: Subject,
    /// Why, as a denied caller is told.
    pub reason: String,
    /// The highest priority among the matching rules decides; a deny wins a tie.
    #[serde(default)]
    pub priority: i64,
}

/// Why a request was refused: `authz denied [<rule>]: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The deciding rule's name, or `key:<prefix>` for a key's model limit.
    pub rule: String,
    /// Its reason.
    pub reason: String,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "authz denied [{}]: {}", self.rule, self.reason)
    }
}

impl Principal {
    /// A caller with no identity: no user, no role, no key (an open gateway's
    /// caller; a library caller by default).
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// The signed-in user `id`, with nothing else known yet.
    pub fn user(id: impl Into<String>) -> Self {
        Self { user_id: Some(id.into()), ..Self::default() }
    }

    /// The caller's role.
    #[must_use]
    pub fn role(mut self, role: CallerRole) -> Self {
        self.role = Some(role);
        self
    }

    /// The user's groups (replacing any given before).
    #[must_use]
    pub fn groups(mut self, groups: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// The project (its id) requests are attributed to.
    #[must_use]
    pub fn project(mut self, id: impl Into<String>) -> Self {
        self.project = Some(id.into());
        self
    }

    /// The other projects (ids) the user belongs to (replacing any given before).
    #[must_use]
    pub fn projects(mut self, ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.projects = ids.into_iter().map(Into::into).collect();
        self
    }

    /// `(id, name)` of the caller's projects, so that they can be named by name
    /// as well (replacing any given before).
    #[must_use]
    pub fn project_names(
        mut self,
        names: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Self {
        self.project_names = names.into_iter().map(|(id, n)| (id.into(), n.into())).collect();
        self
    }

    /// The user's email.
    #[must_use]
    pub fn email(mut self, email: impl Into<String>) -> Self {
        self.email = Some(email.into());
        self
    }

    /// The stored API key presented: its id and its visible prefix.
    #[must_use]
    pub fn key(mut self, id: impl Into<String>, prefix: impl Into<String>) -> Self {
        self.key_id = Some(id.into());
        self.key_prefix = Some(prefix.into());
        self
    }

    /// The visible prefix of a key that has no stored id (a static key).
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = Some(prefix.into());
        self
    }

    /// Limit the key to models matching these patterns.
    #[must_use]
    pub fn allowed_models(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_models = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// The id of the caller's project (attributed or a membership) that
    /// `id_or_name` names, by id or by name.
    pub fn project_id(&self, id_or_name: &str) -> Option<&str> {
        let by_id = self.project.iter().chain(&self.projects).find(|x| *x == id_or_name);
        by_id.map(String::as_str).or_else(|| {
            self.project_names
                .iter()
                .find(|(_, name)| name == id_or_name)
                .map(|(id, _)| id.as_str())
        })
    }

    /// The name of one of the caller's projects, by id.
    pub fn project_name(&self, id: &str) -> Option<&str> {
        self.project_names.iter().find(|(x, _)| x == id).map(|(_, name)| name.as_str())
    }
}

fn subject_matches(s: &Subject, who: &Principal) -> bool {
    match s {
        Subject::Any => true,
        Subject::Role(r) => who.role == Some(*r),
        Subject::Group(g) => who.groups.iter().any(|x| x == g),
        Subject::Project(p) => who.project_id(p).is_some(),
        Subject::User(u) => {
            who.user_id.as_deref() == Some(u.as_str())
                || who.email.as_deref().is_some_and(|e| e.eq_ignore_ascii_case(u))
        }
    }
}

/// What decides whether a caller may use a model: the key's own model limit,
/// the highest-priority matching rule, or no rule at all (allowed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decider<'a> {
    /// The key's `allowed_models` leave the model out (denied).
    KeyLimit,
    /// This rule decides, by its effect.
    Rule(&'a Rule),
    /// No rule matches: allowed.
    Default,
}

impl Decider<'_> {
    /// Whether the caller may go on.
    pub fn allows(&self) -> bool {
        match self {
            Decider::KeyLimit => false,
            Decider::Rule(r) => r.effect == Effect::Allow,
            Decider::Default => true,
        }
    }
}

/// Which rule decides whether `who` may use `model` (through `route`); `rules`
/// are the configured and stored rules together. The highest priority among
/// the matching rules decides; a deny wins a tie.
pub fn decider<'a>(
    rules: impl IntoIterator<Item = &'a Rule>,
    who: &Principal,
    model: &str,
    route: Option<&str>,
) -> Decider<'a> {
    if let Some(allowed) = &who.allowed_models
        && !allowed.iter().any(|p| glob_match(p, model))
    {
        return Decider::KeyLimit;
    }
    let mut best: Option<&Rule> = None;
    for r in rules {
        let hits =
            glob_match(&r.pattern, model) || route.is_some_and(|id| glob_match(&r.pattern, id));
        if !hits || !subject_matches(&r.subject, who) {
            continue;
        }
        best = match best {
            None => Some(r),
            Some(b) if r.priority > b.priority => Some(r),
            Some(b)
                if r.priority == b.priority
                    && r.effect == Effect::Deny
                    && b.effect == Effect::Allow =>
            {
                Some(r)
            }
            keep => keep,
        };
    }
    best.map_or(Decider::Default, Decider::Rule)
}

/// May `who` use `model` (through `route`)? `rules` are the configured and stored
/// rules together.
pub fn decide<'a>(
    rules: impl IntoIterator<Item = &'a Rule>,
    who: &Principal,
    model: &str,
    route: Option<&str>,
) -> Result<(), Denial> {
    match decider(rules, who, model, route) {
        Decider::KeyLimit => {
            let key = who.key_prefix.as_deref().unwrap_or("key");
            let allowed = who.allowed_models.as_deref().unwrap_or_default();
            Err(Denial {
                rule: format!("key:{key}"),
                reason: format!("this API key may only use {}", allowed.join(", ")),
            })
        }
        Decider::Rule(r) if r.effect == Effect::Deny => {
            Err(Denial { rule: r.name.clone(), reason: r.reason.clone() })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, effect: Effect, pattern: &str, subject: Subject, priority: i64) -> Rule {
        Rule {
            name: name.into(),
            effect,
            pattern: pattern.into(),
            subject,
            reason: format!("{name} says so"),
            priority,
        }
    }

    fn member(groups: &[&str]) -> Principal {
        Principal {
            user_id: Some("u1".into()),
            role: Some(CallerRole::Member),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            project: Some("p1".into()),
            projects: vec!["p2".into()],
            project_names: vec![("p1".into(), "storefront".into()), ("p2".into(), "ops".into())],
            email: Some("ann@example.com".into()),
            ..Principal::default()
        }
    }

    #[test]
    fn the_deciding_rule_is_named_whether_it_allows_or_denies() {
        let rules = vec![
            rule("opus-closed", Effect::Deny, "claude-opus-*", Subject::Any, 0),
            rule(
                "research-opus",
                Effect::Allow,
                "claude-opus-*",
                Subject::Group("research".into()),
                10,
            ),
        ];
        let d = decider(&rules, &member(&["research"]), "claude-opus-5", None);
        assert_eq!(d, Decider::Rule(&rules[1]));
        assert!(d.allows());
        let d = decider(&rules, &member(&[]), "claude-opus-5", None);
        assert_eq!(d, Decider::Rule(&rules[0]));
        assert!(!d.allows());
        assert_eq!(decider(&rules, &member(&[]), "gpt-5", None), Decider::Default);
        let mut limited = member(&["research"]);
        limited.allowed_models = Some(vec!["gpt-*".into()]);
        assert_eq!(decider(&rules, &limited, "claude-opus-5", None), Decider::KeyLimit);
        assert!(!Decider::KeyLimit.allows());
    }

    #[test]
    fn default_is_open() {
        assert!(decide(&[], &member(&[]), "any-model", None).is_ok());
    }

    #[test]
    fn deny_everyone_then_allow_a_group_by_priority() {
        let rules = vec![
            rule("opus-closed", Effect::Deny, "claude-opus-*", Subject::Any, 0),
            rule(
                "opus-research",
                Effect::Allow,
                "claude-opus-*",
                Subject::Group("research".into()),
                10,
            ),
        ];
        let err = decide(&rules, &member(&[]), "claude-opus-5", None).unwrap_err();
        assert_eq!(err.to_string(), "authz denied [opus-closed]: opus-closed says so");
        assert!(decide(&rules, &member(&["research"]), "claude-opus-5", None).is_ok());
        assert!(decide(&rules, &member(&[]), "claude-sonnet-5", None).is_ok());
    }

    #[test]
    fn deny_wins_a_tie_and_route_ids_match_too() {
        let rules = vec![
            rule("allow-all", Effect::Allow, "*", Subject::Any, 0),
            rule("no-vertex", Effect::Deny, "vertex-route-*", Subject::Project("p1".into()), 0),
        ];
        assert!(decide(&rules, &member(&[]), "m", Some("vertex-route-abc123")).is_err());
        assert!(decide(&rules, &member(&[]), "m", Some("other-route")).is_ok());
    }

    #[test]
    fn subjects_match_roles_users_and_projects() {
        let who = member(&[]);
        for (s, hit) in [
            (Subject::Role(CallerRole::Member), true),
            (Subject::Role(CallerRole::Admin), false),
            (Subject::User("u1".into()), true),
            (Subject::User("u2".into()), false),
            (Subject::Project("p1".into()), true),
            (Subject::Project("p2".into()), true),
            (Subject::Project("storefront".into()), true),
            (Subject::Project("ops".into()), true),
            (Subject::Project("p3".into()), false),
            (Subject::User("Ann@example.com".into()), true),
            (Subject::User("bob@example.com".into()), false),
            (Subject::Group("g".into()), false),
        ] {
            let rules = [rule("r", Effect::Deny, "*", s.clone(), 0)];
            assert_eq!(decide(&rules, &who, "m", None).is_err(), hit, "{s:?}");
        }
    }

    #[test]
    fn key_allowed_models_limit_the_key() {
        let who = member(&[]).allowed_models(["gpt-*"]).key_prefix("sy-abc");
        assert!(decide(&[], &who, "gpt-5", None).is_ok());
        let err = decide(&[], &who, "claude-x", None).unwrap_err();
        assert_eq!(err.rule, "key:sy-abc");
    }
}
