//! Sources with no listener to POST to, through the real binary: `stdin` and `random`.

mod random;
mod stdin;
