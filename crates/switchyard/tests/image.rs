//! The container image (`scripts/image.sh`), built with buildah from this
//! test's binary, then run from the image's own filesystem (`buildah mount`):
//! rooted there, as the image's user, in its working directory, with its
//! environment and its entrypoint, answering a request. Containers themselves
//! (podman) may not run on these machines; every piece a runtime would take from
//! the image is taken from it here.
//!
//! Needs buildah and root: skipped otherwise, unless SWITCHYARD_REQUIRE_IMAGE is
//! set (CI sets it and installs buildah).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

const USER: u32 = 65532;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `buildah args…`, which must succeed: its standard output, trimmed.
fn buildah(args: &[&str]) -> String {
    let out = Command::new("buildah").args(args).output().unwrap();
    assert!(out.status.success(), "buildah {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The image and its working container, removed however the test ends.
struct Built {
    tag: String,
    container: Option<String>,
}

impl Drop for Built {
    fn drop(&mut self) {
        if let Some(c) = &self.container {
            let _ = Command::new("buildah").args(["rm", c]).output();
        }
        let _ = Command::new("buildah").args(["rmi", "-f", &self.tag]).output();
    }
}

fn can_build() -> bool {
    let buildah =
        Command::new("buildah").arg("--version").output().is_ok_and(|o| o.status.success());
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if buildah && root {
        return true;
    }
    assert!(
        std::env::var_os("SWITCHYARD_REQUIRE_IMAGE").is_none(),
        "SWITCHYARD_REQUIRE_IMAGE is set, but buildah (apt-get install buildah) or root is missing"
    );
    eprintln!("SKIPPED: the image test needs buildah (apt-get install buildah) and root");
    false
}

#[test]
fn the_image_serves_a_request_from_its_own_filesystem() {
    if !can_build() {
        return;
    }
    let mut built =
        Built { tag: format!("localhost/switchyard-test:{}", std::process::id()), container: None };
    let out = Command::new("scripts/image.sh")
        .args(["--binary", env!("CARGO_BIN_EXE_switchyard"), "--tag", &built.tag])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/image.sh: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // What a runtime reads from the image: the user, the working directory,
    // the entrypoint and command, the environment.
    let image: Value =
        serde_json::from_str(&buildah(&["inspect", "--type", "image", &built.tag])).unwrap();
    let config = &image["OCIv1"]["config"];
    assert_eq!(config["User"], "65532:65532", "{config}");
    assert_eq!(config["WorkingDir"], "/var/lib/switchyard", "{config}");
    assert_eq!(config["Entrypoint"], serde_json::json!(["/usr/bin/switchyard"]), "{config}");
    assert_eq!(config["Cmd"], serde_json::json!(["serve"]), "{config}");
    assert!(config["ExposedPorts"].get("8080/tcp").is_some(), "{config}");
    let env: Vec<(String, String)> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str()?.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert!(env.contains(&("SWITCHYARD_LISTEN_ADDR".into(), "0.0.0.0:8080".into())), "{env:?}");

    let container = buildah(&["from", &built.tag]);
    built.container = Some(container.clone());
    let root = PathBuf::from(buildah(&["mount", &container]));
    files_are_the_binary_its_libraries_and_data(&root);

    // The entrypoint and command, rooted in the image, as its user, in its
    // working directory, with its environment and nothing of this one's. Only
    // the listen address (a free port here) and the log format (read by the
    // test) are set over the image's, as `podman run -e` would.
    let entry: Vec<String> = config["Entrypoint"]
        .as_array()
        .unwrap()
        .iter()
        .chain(config["Cmd"].as_array().unwrap())
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let mut cmd = Command::new("unshare");
    cmd.arg(format!("--root={}", root.display()))
        .arg("--wd=/var/lib/switchyard")
        .args(["--setuid", &USER.to_string(), "--setgid", &USER.to_string()])
        .args(&entry)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SWITCHYARD_LISTEN_ADDR", "127.0.0.1:0")
        .env("SWITCHYARD_LOG_FORMAT", "json");
    let scratch = std::env::temp_dir().join(format!("switchyard-image-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut gw = Gateway::spawn(cmd, scratch);
    let listening = gw.wait_for("switchyard listening");
    let addr = listening["fields"]["listen"].as_str().unwrap().to_owned();
    let (status, answer) = post(
        &addr,
        "/v1/chat/completions",
        r#"{"model":"mock","messages":[{"role":"user","content":"from the image"}]}"#,
        &[],
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("from the image"), "{answer}");

    gw.signal("TERM");
    let status = gw.exit_status();
    assert!(status.success(), "exit status after SIGTERM: {status}");

    // The embedded defaults' database, written by the image's user in its
    // working directory: the one place it may write.
    let db = root.join("var/lib/switchyard/switchyard-data/switchyard.db");
    let meta = std::fs::metadata(&db).unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    assert_eq!(meta.uid(), USER, "{} is the gateway user's", db.display());
}

/// Nothing in the image runs but the binary and the shared objects it loads;
/// everything is root's and read-only to the gateway's user but its data
/// directory.
fn files_are_the_binary_its_libraries_and_data(root: &Path) {
    let mut stack = vec![root.to_path_buf()];
    let mut seen_binary = false;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let inside = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if inside == "var/lib/switchyard" {
                assert_eq!((meta.uid(), meta.gid()), (USER, USER), "{inside}");
                continue;
            }
            assert_eq!(meta.uid(), 0, "{inside} belongs to root");
            assert_eq!(meta.mode() & 0o022, 0, "{inside} is writable by others than root");
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
                let library = inside.contains(".so");
                seen_binary |= inside == "usr/bin/switchyard";
                assert!(
                    library || inside == "usr/bin/switchyard",
                    "{inside} is executable but neither the binary nor a library"
                );
            }
        }
    }
    assert!(seen_binary, "usr/bin/switchyard is in the image");
    assert!(root.join("etc/ssl/certs/ca-certificates.crt").is_file(), "the CA roots");
}
