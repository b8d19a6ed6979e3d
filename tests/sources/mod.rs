//! Sources with no listener to POST to, through the real binary: `file`, `stdin` and `random`.

mod file;
mod random;
mod stdin;
