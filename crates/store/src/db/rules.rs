//! Access rules stored in the database (beside those in the configuration file).

use super::{RowExt, Store, new_id, non_empty, now_ms, on_pool, role};
use crate::error::StoreError;
use crate::model::{Effect, NewRule, Rule, Subject};

impl Store {
    pub async fn create_rule(&self, r: NewRule) -> Result<Rule, StoreError> {
        let name = non_empty("rule name", &r.name)?;
        if r.pattern.trim().is_empty() {
            return Err(StoreError::Invalid("rule pattern is empty".into()));
        }
        let (kind, subject) = subject_parts(&r.subject)?;
        let subject = subject.map(str::to_owned);
        let rule = Rule { id: new_id("rul")?, rule: NewRule { name, ..r }, created_at: now_ms() };
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO access_rules (id, name, effect, pattern, subject_kind, subject, reason, \
             priority, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&rule.id)
        .bind(&rule.rule.name)
        .bind(effect_str(rule.rule.effect))
        .bind(&rule.rule.pattern)
        .bind(kind)
        .bind(subject)
        .bind(&rule.rule.reason)
        .bind(rule.rule.priority)
        .bind(rule.created_at)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a rule with this name", "rule", &rule.id))?
        .rows_affected());
        Ok(rule)
    }

    /// Every rule, highest priority first, then by name.
    pub async fn list_rules(&self) -> Result<Vec<Rule>, StoreError> {
        on_pool!(self, |p| {
            let rows = sqlx::query(
                "SELECT id, name, effect, pattern, subject_kind, subject, reason, priority, created_at \
                 FROM access_rules ORDER BY priority DESC, name",
            )
            .fetch_all(p)
            .await?;
            rows.iter().map(rule_from).collect()
        })
    }

    /// Deletes the rule with this id or name; false when there was none.
    pub async fn delete_rule(&self, name_or_id: &str) -> Result<bool, StoreError> {
        let n =
            on_pool!(self, |p| sqlx::query("DELETE FROM access_rules WHERE id = $1 OR name = $1")
                .bind(name_or_id)
                .execute(p)
                .await?
                .rows_affected());
        Ok(n > 0)
    }
}

fn effect_str(e: Effect) -> &'static str {
    match e {
        Effect::Allow => "allow",
        Effect::Deny => "deny",
    }
}

fn subject_parts(s: &Subject) -> Result<(&'static str, Option<&str>), StoreError> {
    let (kind, value) = match s {
        Subject::Any => return Ok(("any", None)),
        Subject::Role(r) => ("role", r.as_str()),
        Subject::Group(g) => ("group", g.as_str()),
        Subject::Project(p) => ("project", p.as_str()),
        Subject::User(u) => ("user", u.as_str()),
    };
    if value.trim().is_empty() {
        return Err(StoreError::Invalid(format!("rule subject {kind} needs a value")));
    }
    Ok((kind, Some(value)))
}

fn rule_from(r: &impl RowExt) -> Result<Rule, StoreError> {
    let effect = match r.col::<String>("effect")?.as_str() {
        "allow" => Effect::Allow,
        "deny" => Effect::Deny,
        other => return Err(StoreError::Corrupt(format!("unknown rule effect {other:?}"))),
    };
    let kind: String = r.col("subject_kind")?;
    let value: Option<String> = r.col("subject")?;
    let subject = match (kind.as_str(), value) {
        ("any", _) => Subject::Any,
        ("role", Some(v)) => Subject::Role(role(&v)?),
        ("group", Some(v)) => Subject::Group(v),
        ("project", Some(v)) => Subject::Project(v),
        ("user", Some(v)) => Subject::User(v),
        (other, _) => return Err(StoreError::Corrupt(format!("bad rule subject {other:?}"))),
    };
    Ok(Rule {
        id: r.col("id")?,
        rule: NewRule {
            name: r.col("name")?,
            effect,
            pattern: r.col("pattern")?,
            subject,
            reason: r.col("reason")?,
            priority: r.col("priority")?,
        },
        created_at: r.col("created_at")?,
    })
}
