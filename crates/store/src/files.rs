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
