//! `switchyard version --verbose` says what the binary was built from: the
//! commit checked out, and the dependency tree as `Cargo.lock` pins it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use sha2::Digest;

#[test]
fn version_verbose_names_the_commit_and_the_dependency_trees_hash() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["version", "--verbose"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    assert_eq!(
        text.lines().next(),
        Some(format!("switchyard {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lock = std::fs::read(root.join("Cargo.lock")).unwrap();
    let sha: String = sha2::Sha256::digest(&lock).iter().map(|b| format!("{b:02x}")).collect();
    let packages = String::from_utf8_lossy(&lock).matches("[[package]]").count();
    assert_eq!(field("dependencies"), format!("{packages} packages, Cargo.lock sha256 {sha}"));
    let commit = field("commit");
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match head {
        Some(head) if std::env::var("SWITCHYARD_COMMIT").is_err() => assert_eq!(commit, head),
        _ => assert!(!commit.is_empty()),
    }
    assert!(field("target").contains('-'), "{text}");
    assert!(field("rustc").starts_with("rustc "), "{text}");
    // The plain version is one line.
    let plain = std::process::Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .arg("version")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(plain.stdout).unwrap().lines().count(), 1);
}
