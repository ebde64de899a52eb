//! `switchyard serve` refused at start-up, promptly and on one line that names
//! the path at fault: a configuration file that cannot be read (missing, a
//! folder), a database (`storage.url`) or spill file (`storage.spill_path`)
//! that cannot be written. The real binary, each in a fresh folder. Tests may
//! run as root, whom permission bits do not stop: the faults here are paths
//! through a file, and a folder where a file should be.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::Gateway;

/// Longer than a start that fails ever takes; a gateway that starts instead is
/// killed then, and the test fails.
const PROMPTLY: Duration = Duration::from_secs(20);

/// A fresh folder for one test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir()
            .join(format!("switchyard-test-startup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    /// A configuration file beside the others, its text with `{dir}` replaced
    /// by this folder (absolute).
    fn config(&self, text: &str) -> PathBuf {
        let path = self.path("switchyard.yaml");
        std::fs::write(&path, text.replace("{dir}", &self.0.display().to_string())).unwrap();
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `switchyard serve --config <config>` in `dir`, run by `wrapper` (a command
/// that runs the binary; none: the binary itself): its exit status and what it
/// wrote on stderr and stdout (the log).
fn serve_under(wrapper: &[&str], dir: &Dir, config: &Path) -> (ExitStatus, String, String) {
    let mut child = common::binary_under(wrapper)
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--config"])
        .arg(config)
        .current_dir(&dir.0)
        .env_remove("SWITCHYARD_CONFIG")
        .env_remove("SWITCHYARD_LISTEN_ADDR")
        .env_remove("SWITCHYARD_LOG_FORMAT")
        .env("SWITCHYARD_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    // Polled with a deadline: a gateway that starts does not exit by itself.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > PROMPTLY {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve did not exit within {PROMPTLY:?}: {}", stdout.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, stderr.join().unwrap(), stdout.join().unwrap())
}

/// Exits non-zero, with one line on stderr naming `path` and saying `why`
/// (and `key`, the setting it came from, when there is one).
fn refused(dir: &Dir, config: &Path, key: Option<&str>, path: &Path, why: &str) {
    refused_under(&[], dir, config, key, path, why);
}

fn refused_under(
    wrapper: &[&str],
    dir: &Dir,
    config: &Path,
    key: Option<&str>,
    path: &Path,
    why: &str,
) {
    let (status, stderr, stdout) = serve_under(wrapper, dir, config);
    assert!(!status.success(), "serve exited {status}; stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {stderr:?}");
    let line = lines[0];
    assert!(line.starts_with("switchyard: "), "{line}");
    assert!(line.contains(&path.display().to_string()), "names {}: {line}", path.display());
    assert!(line.contains(why), "says {why:?}: {line}");
    if let Some(key) = key {
        assert!(line.contains(key), "names {key}: {line}");
    }
    assert!(!stdout.contains("switchyard listening"), "it started: {stdout}");
}

#[test]
fn a_missing_config_file_is_named() {
    let dir = Dir::new("missing-config");
    let config = dir.path("nowhere.yaml");
    refused(&dir, &config, None, &config, "No such file or directory");
}

#[test]
fn a_folder_given_as_the_config_file_is_named() {
    let dir = Dir::new("folder-config");
    let config = dir.path("conf.d");
    std::fs::create_dir(&config).unwrap();
    refused(&dir, &config, None, &config, "Is a directory");
}

#[test]
fn a_database_folder_under_a_file_is_named() {
    let dir = Dir::new("db-under-file");
    std::fs::write(dir.path("blocker"), "").unwrap();
    let config = dir.config("storage: { url: \"sqlite://{dir}/blocker/data/sy.db\" }\n");
    let why = format!("{} is a file, not a folder", dir.path("blocker").display());
    refused(&dir, &config, Some("storage.url"), &dir.path("blocker/data"), &why);
}

#[test]
fn a_database_folder_that_is_a_file_is_named() {
    let dir = Dir::new("db-folder-file");
    std::fs::write(dir.path("data"), "").unwrap();
    let config = dir.config("storage: { url: \"sqlite://{dir}/data/sy.db\" }\n");
    refused(&dir, &config, Some("storage.url"), &dir.path("data"), "is a file, not a folder");
}

#[test]
fn a_folder_where_the_database_file_should_be_is_named() {
    let dir = Dir::new("db-is-folder");
    std::fs::create_dir(dir.path("sy.db")).unwrap();
    let config = dir.config("storage: { url: \"sqlite://{dir}/sy.db\" }\n");
    refused(&dir, &config, Some("storage.url"), &dir.path("sy.db"), "is a folder, not a file");
}

#[test]
fn a_spill_folder_under_a_file_is_named() {
    let dir = Dir::new("spill-under-file");
    std::fs::write(dir.path("blocker"), "").unwrap();
    let config = dir.config(
        "storage: { url: \"sqlite://{dir}/data/sy.db\", spill_path: \"{dir}/blocker/spill/audit.jsonl\" }\n",
    );
    let why = format!("{} is a file, not a folder", dir.path("blocker").display());
    refused(&dir, &config, Some("storage.spill_path"), &dir.path("blocker/spill"), &why);
    // Refused before the database was made.
    assert!(!dir.path("data").exists());
}

#[test]
fn a_spill_folder_that_is_a_file_is_named() {
    let dir = Dir::new("spill-folder-file");
    std::fs::write(dir.path("spill"), "").unwrap();
    let config = dir.config(
        "storage: { url: \"sqlite://{dir}/data/sy.db\", spill_path: \"{dir}/spill/audit.jsonl\" }\n",
    );
    let spill = dir.path("spill");
    refused(&dir, &config, Some("storage.spill_path"), &spill, "is a file, not a folder");
}

#[test]
fn a_folder_where_the_spill_file_should_be_is_named() {
    let dir = Dir::new("spill-is-folder");
    std::fs::create_dir(dir.path("audit.jsonl")).unwrap();
    let config = dir.config(
        "storage: { url: \"sqlite://{dir}/data/sy.db\", spill_path: \"{dir}/audit.jsonl\" }\n",
    );
    let spill = dir.path("audit.jsonl");
    refused(&dir, &config, Some("storage.spill_path"), &spill, "is a folder, not a file");
}

/// The configuration on a read-only mount (a ConfigMap, a `:ro` volume) with
/// its data paths relative to it, so beside it: the first one that cannot be
/// written is named with the system's reason. A mount namespace of the test's
/// own makes the folder read-only (root, util-linux's `unshare`), as
/// permission bits do not stop root.
#[test]
fn a_data_path_on_a_read_only_mount_is_named() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let unshare =
        Command::new("unshare").arg("--version").output().is_ok_and(|o| o.status.success());
    if !(root && unshare) {
        eprintln!("SKIPPED: needs root and util-linux's unshare for a read-only mount");
        return;
    }
    let dir = Dir::new("read-only");
    let config = dir.config("storage: { url: \"sqlite://data/sy.db\" }\n");
    let folder = dir.0.display().to_string();
    // The folder bound onto itself read-only, then the binary in its place.
    let wrapper = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        "mount -o bind,ro \"$0\" \"$0\" && exec \"$@\"",
        &folder,
    ];
    let spill = dir.path("switchyard-audit-spill.jsonl");
    refused_under(
        &wrapper,
        &dir,
        &config,
        Some("storage.spill_path"),
        &spill,
        "Read-only file system",
    );
}

/// A spill folder that does not exist yet is made at start-up (the audit
/// writer made it at its first spill before): not an error, and no spill file
/// is left behind by the check.
#[test]
fn a_missing_spill_folder_is_made_at_start() {
    let config =
        "storage: { url: \"sqlite://data/sy.db\", spill_path: \"spill/new/audit.jsonl\" }\n";
    let gw = Gateway::start_with("startup-spill-made", &[], Some(config));
    gw.wait_for("switchyard listening");
    let dir = std::env::temp_dir()
        .join(format!("switchyard-test-startup-spill-made-{}", std::process::id()));
    assert!(dir.join("spill/new").is_dir(), "the spill folder was made");
    assert!(!dir.join("spill/new/audit.jsonl").exists(), "no spill file is left behind");
}
