//! Sources with no listener to POST to, through the real binary.

mod stdin;
