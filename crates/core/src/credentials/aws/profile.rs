//! The AWS shared configuration files: `~/.aws/credentials` and
//! `~/.aws/config` (or `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`), as the
//! AWS SDKs read them.
//!
//! - In the credentials file a profile is `[name]`; a `[profile name]` there is
//!   ignored.
//! - In the config file a profile is `[profile name]`, and the default one
//!   `[default]` or `[profile default]` (that one wins when both are there); a
//!   bare `[name]` there is ignored.
//! - A profile's properties from both files are merged; the credentials file's
//!   win.
//! - `#` and `;` start comment lines; an indented line continues the property
//!   above it (a sub-property), which these credentials never use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::super::{CredentialError, Env};

/// One profile's properties, merged from both files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Profile {
    pub properties: HashMap<String, String>,
    /// The files it was found in, for errors.
    pub found_in: Vec<PathBuf>,
}

impl Profile {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// How errors name it: `profile "x" (in /path, /path)`.
    pub fn describe(&self, name: &str) -> String {
        let files: Vec<String> = self.found_in.iter().map(|p| p.display().to_string()).collect();
        format!("AWS profile {name:?} ({})", files.join(", "))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Config,
    Credentials,
}

/// The profile the environment selects: `AWS_PROFILE`, else `default`.
pub(crate) fn selected(env: &Env) -> String {
    env.get("AWS_PROFILE").unwrap_or_else(|| "default".to_owned())
}

/// The two files' paths: the variables', else under `~/.aws`.
fn paths(env: &Env) -> (Option<PathBuf>, Option<PathBuf>) {
    let home = env.home().map(|h| h.join(".aws"));
    let config = env
        .get("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join("config")));
    let credentials = env
        .get("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join("credentials")));
    (config, credentials)
}

/// Profile `name` from the shared files; `None` when neither has it (or
/// neither exists). A file that exists but cannot be read is an error.
pub(crate) fn load(env: &Env, name: &str) -> Result<Option<Profile>, CredentialError> {
    let (config, credentials) = paths(env);
    let mut profile = Profile::default();
    // Config first, so that the credentials file's properties win.
    for (path, kind) in [(config, FileKind::Config), (credentials, FileKind::Credentials)] {
        let Some(path) = path else { continue };
        let Some(text) = read(&path)? else { continue };
        if let Some(properties) = parse(&text, kind).remove(name) {
            profile.properties.extend(properties);
            profile.found_in.push(path);
        }
    }
    Ok((!profile.found_in.is_empty()).then_some(profile))
}

fn read(path: &Path) -> Result<Option<String>, CredentialError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            Err(CredentialError::config(path.display().to_string(), format!("cannot read it: {e}")))
        }
    }
}

/// Every profile of one file, by name.
fn parse(text: &str, kind: FileKind) -> HashMap<String, HashMap<String, String>> {
    let mut profiles: HashMap<String, HashMap<String, String>> = HashMap::new();
    // The section being read: its profile name, or `None` when it is ignored.
    let mut current: Option<String> = None;
    // `[profile default]` beats `[default]` in the config file.
    let mut explicit_default = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix('[') {
            // `[name]`, maybe followed by a comment.
            let header = rest.split_once(']').map(|(h, _)| h.trim());
            current = header.and_then(|h| section_profile(h, kind));
            if let Some(name) = &current {
                let prefixed = has_profile_prefix(header.unwrap_or_default());
                if kind == FileKind::Config && name == "default" {
                    if prefixed && !explicit_default {
                        // Drop what a bare `[default]` above set.
                        profiles.remove("default");
                        explicit_default = true;
                    } else if !prefixed && explicit_default {
                        current = None;
                        continue;
                    }
                }
                profiles.entry(name.clone()).or_default();
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // A sub-property's line: not read.
            continue;
        }
        let (Some(name), Some((key, value))) = (&current, trimmed.split_once('=')) else {
            continue;
        };
        if let Some(properties) = profiles.get_mut(name) {
            properties.insert(key.trim().to_owned(), value.trim().to_owned());
        }
    }
    profiles
}

fn has_profile_prefix(header: &str) -> bool {
    header.strip_prefix("profile").is_some_and(|r| r.starts_with([' ', '\t']))
}

/// The profile a section header names in a file of `kind`, or `None` when
/// the SDKs ignore that section there.
fn section_profile(header: &str, kind: FileKind) -> Option<String> {
    let prefixed = has_profile_prefix(header);
    let name = if prefixed { header.get("profile".len()..)?.trim() } else { header };
    if name.is_empty() {
        return None;
    }
    match (kind, prefixed) {
        (FileKind::Credentials, false) => Some(name.to_owned()),
        (FileKind::Credentials, true) => None,
        (FileKind::Config, true) => Some(name.to_owned()),
        (FileKind::Config, false) => (name == "default").then(|| name.to_owned()),
    }
}

/// The region: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the selected
/// profile's `region`.
pub(crate) fn region(env: &Env, profile: Option<&Profile>) -> Option<String> {
    env.get("AWS_REGION")
        .or_else(|| env.get("AWS_DEFAULT_REGION"))
        .or_else(|| profile.and_then(|p| p.get("region")).map(str::to_owned))
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
