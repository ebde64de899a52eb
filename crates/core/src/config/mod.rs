//! Loading the configuration: choose the file, interpolate `${ENV}`, parse.
//! Validation and compilation are in [`crate::catalog`].

mod expand;
pub mod raw;
mod span;

use std::path::{Path, PathBuf};

pub use expand::{SourceMap, interpolate};
pub use raw::RawConfig;
pub use span::{Span, Spanned};

/// The embedded default: runs on a fresh machine with no file.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.yaml");

/// Environment variable naming the config file when no flag is given.
pub const CONFIG_ENV: &str = "SWITCHYARD_CONFIG";

/// Where the configuration text came from.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// A path, or `<embedded default>`.
    pub name: String,
    /// The file read; `None` for the embedded default and text given in code.
    pub path: Option<PathBuf>,
    /// The text as read, before `${…}` interpolation.
    pub text: String,
}

/// Loading failed. The message names the file, the line and the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Read {
        /// The path, as given.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A `${…}` reference is malformed, unclosed, or names an unset variable
    /// without a default.
    #[error("{file}:{line}: {message}")]
    Interpolation {
        /// The source's name.
        file: String,
        /// Its line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The interpolated text is not valid YAML, or not the configuration's shape
    /// (an unknown field, a wrong type). Reported against the text as written:
    /// its position, its lines in the snippet, and `${NAME}` where the message
    /// would repeat a variable's value.
    #[error("{file}{}: {message}{snippet}", position(*.line, *.column))]
    Parse {
        /// The source's name.
        file: String,
        /// The line as written, from 1, when known.
        line: Option<usize>,
        /// The column as written, from 1, in characters, when known.
        column: Option<usize>,
        /// The YAML parser's message.
        message: String,
        /// The lines around the position as written, with a caret under the
        /// column (empty when the position is unknown).
        snippet: String,
    },
}

/// `:line:column`, `:line` or nothing.
fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

impl ConfigSource {
    /// The file given by flag, else by `SWITCHYARD_CONFIG`, else the embedded default.
    pub fn locate(flag: Option<&Path>) -> Result<Self, ConfigError> {
        let env_path = std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
        match flag.map(Path::to_path_buf).or(env_path) {
            Some(path) => Self::from_path(&path),
            None => Ok(Self::embedded()),
        }
    }

    /// The file at `path`, read now.
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { file: name.clone(), source })?;
        Ok(Self { name, path: Some(path.to_path_buf()), text })
    }

    /// The embedded default ([`EMBEDDED_DEFAULT`]), named `<embedded default>`.
    pub fn embedded() -> Self {
        Self {
            name: "<embedded default>".to_owned(),
            path: None,
            text: EMBEDDED_DEFAULT.to_owned(),
        }
    }

    /// Text given in code; `name` is what problems are reported under.
    pub fn from_text(name: &str, text: &str) -> Self {
        Self { name: name.to_owned(), path: None, text: text.to_owned() }
    }

    /// Interpolate and parse, reading variables from the process environment.
    #[cfg(feature = "yaml")]
    pub fn parse(&self) -> Result<RawConfig, ConfigError> {
        self.parse_with(&|k| std::env::var(k).ok())
    }

    /// Interpolate and parse, reading variables with `env` (nothing else is read).
    #[cfg(feature = "yaml")]
    pub fn parse_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<RawConfig, ConfigError> {
        let expanded = expand::expand(&self.text, &self.name, env)?;
        // No snippet from the parser: it would quote the expanded text, values
        // and all. The map renders one from the text as written.
        let mut options = serde_saphyr::Options::default();
        options.with_snippet = false;
        match serde_saphyr::from_str_with_options::<RawConfig>(&expanded.text, options) {
            Ok(mut raw) => {
                raw.source_map = expanded.map;
                raw.base_dir = self
                    .path
                    .as_deref()
                    .and_then(Path::parent)
                    .filter(|d| !d.as_os_str().is_empty())
                    .map(Path::to_path_buf);
                Ok(raw)
            }
            Err(e) => Err(expanded.map.parse_error(&self.name, &expanded.text, &e)),
        }
    }
}

#[cfg(test)]
#[cfg(feature = "yaml")]
mod tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "KEY" => Some("sk-1".into()),
            _ => None,
        }
    }

    #[test]
    fn interpolates_with_defaults_and_escapes() {
        let out = interpolate("a: ${KEY}\nb: ${NOPE:-x}\nc: $${KEY}\nd: $5\n", "f", &env).unwrap();
        assert_eq!(out, "a: sk-1\nb: x\nc: ${KEY}\nd: $5\n");
    }

    #[test]
    fn missing_variable_names_file_and_line() {
        let err = interpolate("a: 1\nb: ${NOPE}\n", "conf.yaml", &env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "conf.yaml:2: environment variable NOPE is not set (write `${NOPE:-}` to allow that)"
        );
    }

    #[test]
    fn parse_errors_name_file_line_and_field() {
        let src = ConfigSource::from_text("conf.yaml", "gateway:\n  listen: 1\n  bogus: true\n");
        let err = src.parse_with(&env).unwrap_err().to_string();
        assert!(err.starts_with("conf.yaml:3:3: unknown field `bogus`"), "{err}");
        assert!(err.contains("3 |   bogus: true\n  |   ^\n"), "{err}");
    }

    #[test]
    fn embedded_default_parses() {
        let raw = ConfigSource::embedded().parse_with(&|_| None).unwrap();
        assert!(raw.models.len() > 10);
        assert!(raw.providers.contains_key("mock"));
    }
}
