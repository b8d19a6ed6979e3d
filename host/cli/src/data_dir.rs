//! A process's data dir, held for its life (`sluice.lock`).

use std::path::Path;

use anyhow::{Context as _, bail};

/// Holds `<data-dir>/sluice.lock` for the life of the process, so two running processes never
/// share a data dir: dead-letter files, the plugin cache and the default Kafka group instance
/// id (static membership) all derive from it. The lock goes with the process, even on kill -9.
pub(crate) fn lock_data_dir(dir: &Path) -> anyhow::Result<std::fs::File> {
    match try_lock_data_dir(dir)? {
        Some(file) => Ok(file),
        None => {
            let pid = std::fs::read_to_string(dir.join("sluice.lock")).unwrap_or_default();
            bail!(
                "the data dir `{}` is in use by another running sluice (pid {}); give each \
                 process its own `--data-dir`",
                dir.display(),
                pid.trim()
            )
        }
    }
}

/// [`lock_data_dir`], or `None` when a running process holds it.
pub(crate) fn try_lock_data_dir(dir: &Path) -> anyhow::Result<Option<std::fs::File>> {
    use std::io::{Seek as _, Write as _};
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the data dir `{}`", dir.display()))?;
    let path = dir.join("sluice.lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening `{}`", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            file.set_len(0)?;
            file.rewind()?;
            writeln!(file, "{}", std::process::id())?;
            Ok(Some(file))
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking `{}`", path.display()))
        }
    }
}
