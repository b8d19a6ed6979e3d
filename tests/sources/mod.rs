//! Sources with no listener to POST to, through the real binary: `file`, `stdin`, `random`,
//! `kafka` and `s3`.

mod file;
mod kafka;
mod random;
mod s3;
mod stdin;
