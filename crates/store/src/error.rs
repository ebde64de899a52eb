//! The store's error type. Messages name what went wrong, never a secret: no API
//! key, no sealed credential, no connection password.

/// Everything a [`crate::Store`] call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (`what` says which, e.g. "a user with
    /// this email").
    #[error("{0} already exists")]
    Conflict(String),
    /// The row the call targets (or references) does not exist.
    #[error("{what} not found: {id}")]
    NotFound { what: &'static str, id: String },
    /// The caller passed something the store will not write.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// A stored value could not be read back (a column of the wrong type, a role
    /// the code does not know, malformed JSON).
    #[error("stored data is malformed: {0}")]
    Corrupt(String),
    /// The operating system's random source failed.
    #[error("no randomness available: {0}")]
    Random(String),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// Maps a uniqueness violation to [`StoreError::Conflict`] (`what` already
    /// exists), a missing reference to [`StoreError::NotFound`], anything else to
    /// [`StoreError::Database`].
    pub(crate) fn on_write(
        what: &str,
        refs: &'static str,
        ref_id: &str,
    ) -> impl FnOnce(sqlx::Error) -> StoreError {
        let what = what.to_owned();
        let ref_id = ref_id.to_owned();
        move |e| match &e {
            sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(what),
            sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
                StoreError::NotFound { what: refs, id: ref_id }
            }
            _ => StoreError::Database(e),
        }
    }

    pub(crate) fn not_found(what: &'static str, id: &str) -> StoreError {
        StoreError::NotFound { what, id: id.to_owned() }
    }

    /// True for [`StoreError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict(_))
    }

    /// True for [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }
}
