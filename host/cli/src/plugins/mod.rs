//! `sluice plugins new|build|inspect`: a plugin author's workflow. `main.rs` parses the
//! arguments; this module owns what each subcommand does.
//!
//! - [`new()`] (`new NAME --lang rust|python|js [--kind deserializer|processor|buffer]`) writes a
//!   ready-to-build folder from the templates in `plugins/templates/` (embedded in the binary)
//!   with the WIT beside it.
//! - [`build()`] (`build DIR`) runs the language's component tool and writes `DIR/NAME.wasm`.
//! - [`inspect()`] (`inspect FILE.wasm`) loads it as `sluice run` would and prints its world,
//!   imports (with what each asks for and what sluice grants), size, compile and start cost,
//!   and, with `--sample`, the outcome of every sample record.
//!
//! [`Lang`] and [`Kind`] are the vocabulary the three share.

mod build;
mod inspect;
mod new;

pub(crate) use self::build::build;
pub(crate) use self::inspect::inspect;
pub(crate) use self::new::new;

use clap::ValueEnum;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Js,
}

/// What a new plugin is, and so which world it implements.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Kind {
    /// Raw bytes in, events out (`sluice:plugin/deserializer-plugin@0.2.0`).
    Deserializer,
    /// Events in, a verdict per event out (`sluice:plugin/processor-plugin@0.2.0`).
    Processor,
    /// A buffer's policy: where each written record goes, which tier is read next
    /// (`sluice:plugin/buffer-plugin@0.2.0`).
    Buffer,
}

impl Kind {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Deserializer => "deserializer",
            Kind::Processor => "processor",
            Kind::Buffer => "buffer policy",
        }
    }
}
