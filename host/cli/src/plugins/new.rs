//! `sluice plugins new`: writes a plugin folder from the templates in `plugins/templates/`
//! and the contract in `wit/v0.2/`, both embedded in the binary at build time.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::{Kind, Lang};

/// A file of `plugins/templates/`, embedded.
macro_rules! template {
    ($path:literal) => {
        include_str!(concat!("../../../../plugins/templates/", $path))
    };
}

/// A file of `wit/v0.2/` as `(file name, text)`, embedded.
macro_rules! wit {
    ($file:literal) => {
        ($file, include_str!(concat!("../../../../wit/v0.2/", $file)))
    };
}

impl Kind {
    /// The contract files written into `wit/`: `(file name, text)`.
    fn wit(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Deserializer => &[wit!("types.wit"), wit!("deserializer.wit")],
            Kind::Processor => &[wit!("types.wit"), wit!("processor.wit")],
            Kind::Buffer => &[wit!("types.wit"), wit!("buffer.wit")],
        }
    }

    /// The plugin's source: `(path in the new folder, template text)`.
    fn source(self, lang: Lang) -> (&'static str, &'static str) {
        // One template a language, in the order of `Lang`.
        let [rust, python, js] = match self {
            Kind::Deserializer => [
                template!("deserializer/lib.rs"),
                template!("deserializer/app.py"),
                template!("deserializer/plugin.js"),
            ],
            Kind::Processor => [
                template!("processor/lib.rs"),
                template!("processor/app.py"),
                template!("processor/plugin.js"),
            ],
            Kind::Buffer => [
                template!("buffer/lib.rs"),
                template!("buffer/app.py"),
                template!("buffer/plugin.js"),
            ],
        };
        match lang {
            Lang::Rust => ("src/lib.rs", rust),
            Lang::Python => ("app.py", python),
            Lang::Js => ("plugin.js", js),
        }
    }
}

/// The build files a language needs beside the source: `(path, template text)`.
fn build_files(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::Rust => &[("Cargo.toml", template!("Cargo.toml"))],
        Lang::Python => &[],
        Lang::Js => &[("package.json", template!("package.json"))],
    }
}

/// `sluice plugins new`.
pub(crate) fn new(
    name: &str,
    kind: Kind,
    lang: Lang,
    dir: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        bail!(
            "plugin name `{name}` must start with a lowercase letter and hold only a-z, 0-9 and `_` \
             (it becomes the file name `{name}.wasm` and the name pipelines use)"
        );
    }
    let root = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if root.exists() && std::fs::read_dir(&root)?.next().is_some() {
        bail!(
            "`{}` already exists and is not empty; pick another name or --dir",
            root.display()
        );
    }
    let mut files: Vec<(String, String)> = kind
        .wit()
        .iter()
        .map(|(file, text)| (format!("wit/{file}"), (*text).to_owned()))
        .collect();
    files.extend(
        build_files(lang)
            .iter()
            .chain([&kind.source(lang)])
            .map(|(path, text)| ((*path).to_owned(), text.replace("{{name}}", name))),
    );
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a file in a folder"))?;
        std::fs::write(&path, text).with_context(|| format!("writing `{}`", path.display()))?;
    }
    Ok(root)
}
