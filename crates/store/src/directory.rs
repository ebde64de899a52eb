//! Names the configuration gives to the directory (users and projects in access
//! rules), checked against it. A rule is matched by name or id at request time, so
//! one that names nobody yet starts to apply once that user or project exists;
//! until then it does nothing, which the operator should hear about (at start, in
//! `switchyard check` and at each reload) rather than discover.

use switchyard_core::access::{Rule, Subject};

use crate::{Store, StoreError};

/// One warning per configured rule whose project or user names no one: in the
/// database, or at all when there is none (`store` is `None`).
pub async fn unknown_rule_subjects(
    store: Option<&Store>,
    rules: &[Rule],
) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    for rule in rules {
        let (kind, named) = match &rule.subject {
            Subject::Project(p) => ("project", p),
            Subject::User(u) => ("user", u),
            _ => continue,
        };
        let Some(store) = store else {
            out.push(format!(
                "access_rules[{}]: {kind} {named:?}: there is no user database (none configured, or not created yet), so the rule matches no one",
                rule.name
            ));
            continue;
        };
        let found = match kind {
            "project" => {
                store.project(named).await?.is_some()
                    || store.project_by_name(named).await?.is_some()
            }
            _ => store.user(named).await?.is_some() || store.user_by_email(named).await?.is_some(),
        };
        if !found {
            out.push(format!(
                "access_rules[{}]: {kind} {named:?} is not in the database (yet): the rule matches no one until it exists",
                rule.name
            ));
        }
    }
    Ok(out)
}
