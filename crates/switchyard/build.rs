//! What `switchyard version --verbose` says of the build: the commit, the
//! target and profile, the compiler, and a hash of the dependency tree
//! (`Cargo.lock`). Nothing that changes between two builds of one commit
//! (no time, no path), so such builds stay byte for byte the same.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../..");
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    println!("cargo:rerun-if-env-changed=SWITCHYARD_COMMIT");
    let (hash, packages) = match std::fs::read(&lock) {
        Ok(bytes) => {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(&bytes);
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            let text = String::from_utf8_lossy(&bytes);
            (hex, text.matches("[[package]]").count())
        }
        Err(_) => ("unknown".to_owned(), 0),
    };
    println!("cargo:rustc-env=SWITCHYARD_LOCK_SHA256={hash}");
    println!("cargo:rustc-env=SWITCHYARD_LOCK_PACKAGES={packages}");
    println!("cargo:rustc-env=SWITCHYARD_COMMIT={}", commit(&root));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=SWITCHYARD_RUSTC={version}");
    for (name, var) in [
        ("TARGET", "TARGET"),
        ("PROFILE", "PROFILE"),
        ("OPT_LEVEL", "OPT_LEVEL"),
        ("DEBUG", "DEBUG"),
    ] {
        let value = std::env::var(var).unwrap_or_default();
        println!("cargo:rustc-env=SWITCHYARD_BUILD_{name}={value}");
    }
}

/// The commit built: `SWITCHYARD_COMMIT` where the builder says (a source
/// archive has no `.git`), else git's `HEAD`; `unknown` without either. Local
/// changes on top of it are not told apart: a release is built from a clean
/// checkout of its tag.
fn commit(root: &Path) -> String {
    if let Ok(c) = std::env::var("SWITCHYARD_COMMIT")
        && !c.trim().is_empty()
    {
        return c.trim().to_owned();
    }
    let git = root.join(".git");
    if git.is_dir() {
        // Rebuilt when HEAD moves (a branch's ref, or HEAD itself detached).
        // Only files that exist are named: cargo runs the script again on
        // every build for one that does not.
        let mut watched = vec![git.join("HEAD"), git.join("packed-refs")];
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
            && let Some(r) = head.trim().strip_prefix("ref: ")
        {
            watched.push(git.join(r));
        }
        for path in watched.iter().filter(|p| p.is_file()) {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}
