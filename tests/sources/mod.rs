//! Sources with no listener to POST to, through the real binary: `file`, `stdin`, `random` and
//! `kafka`.

mod file;
mod kafka;
mod random;
mod stdin;
