//! What validation may check beyond the file itself ([`Context`]): every component's rules
//! take it, and it names none of them, so no component module imports the parser.

/// What validation may check beyond the file itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct Context<'a> {
    /// The plugins that exist (every kind). `None` skips the check.
    pub deserializers: Option<&'a [String]>,
    /// Builds a built-in processor to find what only building can (grok patterns compiled,
    /// pattern files read): the key inside its block at fault and why. `None` skips it.
    pub builtins: Option<CheckBuiltin>,
}

/// See [`Context::builtins`].
pub type CheckBuiltin = fn(&crate::BuiltinProcessor) -> Result<(), (String, String)>;
