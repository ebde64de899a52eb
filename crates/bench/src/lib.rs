//! What the bench's binaries share: the processes under test and what `/proc`
//! says about them.

pub mod procs;
