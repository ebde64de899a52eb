//! Where a configuration value was written: the core's own position type, so
//! that the catalog's compile steps report `file:line` without naming the YAML
//! parser. With the `yaml` feature a [`Spanned`] value deserializes through
//! serde-saphyr's, which knows the position; without it (or from any other
//! deserializer, or built in code) the position is [`Span::UNKNOWN`].

use serde::{Deserialize, Deserializer};

/// A position in the parsed text: line and column from 1, or unknown (both 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    line: u64,
    column: u64,
}

impl Span {
    /// No position: a default, or a value built in code.
    pub const UNKNOWN: Span = Span { line: 0, column: 0 };

    /// Line and column, from 1 (0: unknown).
    pub const fn new(line: u64, column: u64) -> Self {
        Self { line, column }
    }

    /// The line, from 1; 0 when unknown.
    pub const fn line(self) -> u64 {
        self.line
    }

    /// The column, from 1; 0 when unknown.
    pub const fn column(self) -> u64 {
        self.column
    }

    /// Whether the position is known.
    pub const fn is_known(self) -> bool {
        self.line > 0
    }
}

/// A value and where it was written ([`Span::UNKNOWN`] for one built in code:
/// a problem with it is reported without a line, as one with a default is).
/// Equality, like the YAML parser's own, compares positions too.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where it was written (where an alias refers to it, for one).
    pub span: Span,
}

impl<T> Spanned<T> {
    /// `value`, written at `span`.
    pub const fn new(value: T, span: Span) -> Self {
        Self { value, span }
    }

    /// `value`, from no file.
    pub const fn unlocated(value: T) -> Self {
        Self { value, span: Span::UNKNOWN }
    }
}

/// A default value is from no file (a block left out, say).
impl<T: Default> Default for Spanned<T> {
    fn default() -> Self {
        Self::unlocated(T::default())
    }
}

#[cfg(feature = "yaml")]
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde-saphyr recognises its own wrapper and fills in the position; any
        // other deserializer gives the plain value at an unknown position.
        let s = serde_saphyr::Spanned::<T>::deserialize(deserializer)?;
        let at = s.referenced;
        Ok(Self::new(s.value, Span::new(at.line(), at.column())))
    }
}

#[cfg(not(feature = "yaml"))]
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Self::unlocated)
    }
}
