//! Files and folders that hold the database or request records (the SQLite
//! file, its `-wal` and `-shm`, the audit spill file): created readable by the
//! gateway's user only, whatever the process umask. Modes are given at creation
//! rather than by changing the umask, which is process-wide state a library
//! must not touch. What already exists is left as the operator made it.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of a data file the store creates.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of a folder the store creates for its files.
pub(crate) const DIR_MODE: u32 = 0o700;

/// `OpenOptions` that create a file with [`FILE_MODE`].
pub(crate) fn options() -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        o.mode(FILE_MODE);
    }
    o
}

/// `dir` and its missing parents, each created with [`DIR_MODE`]; folders that
/// exist keep their mode.
pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut b = DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        b.mode(DIR_MODE);
    }
    b.create(dir)
}

/// Creates `path` empty with [`FILE_MODE`] unless it exists. SQLite opens an
/// empty file as an empty database, and creates its `-wal` and `-shm` with the
/// database file's permissions, so this covers all three.
pub(crate) fn create_file_if_missing(path: &Path) -> io::Result<()> {
    match options().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// A new file at `path` (replacing any left there) created with [`FILE_MODE`],
/// to be written and then renamed over `like`, whose permissions it takes once
/// written, so a rename does not change who may read the data.
pub(crate) fn create_replacement(path: &Path) -> io::Result<File> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    options().write(true).create_new(true).open(path)
}

/// `dir` made ready for a data file (created as [`create_dir_all`] does), or
/// what is wrong with it, naming the path at fault: `what` is the folder's
/// role in the message ("the database folder"). A path through a file is
/// said as such (the OS says only "File exists" or "Not a directory").
pub(crate) fn prepare_dir(dir: &Path, what: &str) -> Result<(), String> {
    create_dir_all(dir).map_err(|e| {
        let shown = dir.display();
        // The nearest part of the path that exists: a file there is the fault.
        match dir.ancestors().find(|a| !a.as_os_str().is_empty() && a.exists()) {
            Some(a) if !a.is_dir() && a == dir => {
                format!("cannot write {what} {shown}: it is a file, not a folder")
            }
            Some(a) if !a.is_dir() => {
                format!("cannot write {what} {shown}: {} is a file, not a folder", a.display())
            }
            _ => format!("cannot write {what} {shown}: {e}"),
        }
    })
}

/// Whether a data file can be written at `path`: one that exists is opened
/// for writing (and left as it was); else one is created and removed again,
/// which proves the folder writable. `what` is the file's role in the message.
pub(crate) fn check_writable(path: &Path, what: &str) -> Result<(), String> {
    let shown = path.display();
    if path.is_dir() {
        return Err(format!("cannot write {what} {shown}: it is a folder, not a file"));
    }
    let res = if path.exists() {
        OpenOptions::new().write(true).open(path).map(drop)
    } else {
        options().write(true).create_new(true).open(path).and_then(|f| {
            drop(f);
            std::fs::remove_file(path)
        })
    };
    res.map_err(|e| format!("cannot write {what} {shown}: {e}"))
}
