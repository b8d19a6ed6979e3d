//! What validation may check beyond the file itself ([`Context`]): the rules of sources and
//! sinks take it; it imports nothing but the processors' [`CheckBuiltin`], and no component
//! module imports the parser.

pub use crate::processor::CheckBuiltin;

/// What validation may check beyond the file itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct Context<'a> {
    /// The plugins that exist (every kind). `None` skips the check.
    pub deserializers: Option<&'a [String]>,
    /// The processor plugins among them: only one of these replaces a built-in processor of
    /// its name (a deserializer named `csv` does not replace `csv`). `None`: none does.
    pub processors: Option<&'a [String]>,
    /// Leave out what depends on this machine rather than the file: that the certificates,
    /// templates and other files it names exist (`sluice validate --no-environment`, for a
    /// file written for another machine). Default false: they are checked.
    pub no_environment: bool,
    /// Builds a built-in processor to find what only building can. `None` skips it.
    pub builtins: Option<CheckBuiltin>,
}
