//! How a component's checked config becomes what its runtime reads: one protocol for every
//! source, buffer and sink ([`Resolve`]).

/// A checked config resolved into what its runtime reads: defaults that depend on the pipeline
/// filled in, secrets (`${env:...}`, `${file:...}`) read, templates parsed. It reads secrets,
/// so the runtime calls it once, at startup. A component whose config is already what runs is
/// its own settings.
pub trait Resolve {
    /// What the runtime reads.
    type Settings;
    /// Why resolving failed (a secret that cannot be read); startup prints it after the
    /// component's name.
    type Error: std::error::Error + Send + Sync + 'static;
    /// `pipeline`: the name of the component's pipeline (some defaults name it).
    fn resolve(&self, pipeline: &str) -> Result<Self::Settings, Self::Error>;
}

/// The settings of a component whose config is what runs: itself.
macro_rules! resolves_to_itself {
    ($($config:ty),* $(,)?) => {
        $(
            impl $crate::resolve::Resolve for $config {
                type Settings = $config;
                type Error = std::convert::Infallible;
                fn resolve(&self, _pipeline: &str) -> Result<$config, std::convert::Infallible> {
                    Ok(self.clone())
                }
            }
        )*
    };
}
pub(crate) use resolves_to_itself;
