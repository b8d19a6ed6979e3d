//! The operator's commands (`sluice dlq ...`, `sluice buffer ...`): what they share. Each works on one pipeline of a
//! pipeline file and the data dir of the process that runs it. When that process runs (it
//! holds the data dir's lock), what changes the pipeline goes through its admin endpoint; when
//! it is stopped, the command holds the lock itself and works on the pipeline's topic and
//! files straight.

pub(crate) mod buffer;
pub(crate) mod dlq;
pub(crate) mod tap;
pub(crate) mod top;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::admin::Location;

/// Which pipeline, of which file, run with which data dir.
#[derive(clap::Args)]
pub(crate) struct PipelineArgs {
    /// The pipeline's name.
    pub(crate) pipeline: String,
    /// The pipeline file.
    #[arg(long, short = 'f', default_value = "pipelines.yaml")]
    pub(crate) file: PathBuf,
    /// The data dir of the process that runs (or ran) it, as `sluice run --data-dir` had it.
    #[arg(long, default_value = "./data")]
    pub(crate) data_dir: PathBuf,
}

impl PipelineArgs {
    /// The pipeline's config, read from the file (not checked against the plugins: these
    /// commands do not run them).
    pub(crate) fn config(&self) -> anyhow::Result<sluice_config::Pipeline> {
        let text = std::fs::read_to_string(&self.file)
            .with_context(|| format!("reading pipeline file `{}`", self.file.display()))?;
        let context = sluice_config::Context {
            deserializers: None,
            processors: None,
            no_environment: false,
            builtins: None,
        };
        let config = sluice_config::parse(&self.file.display().to_string(), &text, context)
            .map_err(|errors| anyhow::anyhow!("{errors}"))?;
        let names: Vec<String> = config.pipelines.iter().map(|p| p.name.clone()).collect();
        match config
            .pipelines
            .into_iter()
            .find(|p| p.name == self.pipeline)
        {
            Some(p) => Ok(p),
            None => bail!(
                "`{}` has no pipeline `{}` (it has: {})",
                self.file.display(),
                self.pipeline,
                names.join(", ")
            ),
        }
    }
}

/// How to reach a running sluice's admin endpoint.
#[derive(clap::Args)]
pub(crate) struct Remote {
    /// The admin endpoint's URL (`https://host:4900`). Default: the one the running process
    /// wrote into its data dir (`admin.json`).
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// The metrics listener's user name (`sluice run --metrics-username`).
    #[arg(long, requires = "password")]
    pub(crate) username: Option<String>,
    /// Its password: `${env:NAME}`, `${file:PATH}`, or the text.
    #[arg(long, requires = "username")]
    pub(crate) password: Option<String>,
    /// A CA certificate (PEM) to trust for an HTTPS endpoint, beside the system's.
    #[arg(long)]
    pub(crate) ca_file: Option<PathBuf>,
}

/// Where a command acts: on the running process, or on a stopped pipeline's data dir, which
/// it then holds locked.
pub(crate) enum Reach {
    Running(Client),
    Stopped(std::fs::File),
}

/// Reaches the process of `data_dir`: its lock free, the command takes it (stopped); held, the
/// running process's admin endpoint.
pub(crate) fn reach(data_dir: &Path, remote: &Remote) -> anyhow::Result<Reach> {
    if let Some(lock) = crate::data_dir::try_lock_data_dir(data_dir)? {
        return Ok(Reach::Stopped(lock));
    }
    let url = match &remote.url {
        Some(url) => url.clone(),
        None => {
            let path = Location::path(data_dir);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "sluice is running on the data dir `{}` but serves no admin endpoint (no `{}`): start it with `--admin`, or give `--url`",
                    data_dir.display(),
                    path.display()
                )
            })?;
            let location: Location = serde_json::from_str(&text)
                .with_context(|| format!("reading `{}`", path.display()))?;
            location.url
        }
    };
    Ok(Reach::Running(Client::new(url, remote)?))
}

/// A client of the admin endpoint.
pub(crate) struct Client {
    url: String,
    http: reqwest::Client,
    auth: Option<sluice_config::secret::BasicAuth>,
}

impl Client {
    fn new(url: String, remote: &Remote) -> anyhow::Result<Self> {
        // No overall timeout: a tap streams for as long as it is asked to.
        let mut http =
            reqwest::Client::builder().connect_timeout(std::time::Duration::from_secs(10));
        if let Some(ca) = &remote.ca_file {
            let pem = std::fs::read(ca).with_context(|| format!("--ca-file `{}`", ca.display()))?;
            let certificate = reqwest::Certificate::from_pem(&pem)
                .with_context(|| format!("--ca-file `{}`: not a PEM certificate", ca.display()))?;
            http = http.add_root_certificate(certificate);
        }
        let auth = remote
            .username
            .clone()
            .zip(remote.password.clone())
            .map(|(username, password)| sluice_config::Credentials { username, password }.resolve())
            .transpose()
            .context("--password")?;
        Ok(Self {
            url: url.trim_end_matches('/').to_owned(),
            http: http.build().context("building the HTTP client")?,
            auth,
        })
    }

    /// Sends `request` to `path`; the answer's JSON, or an error that says what the endpoint
    /// said.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<reqwest::Response> {
        let request = match &self.auth {
            Some(auth) => request.basic_auth(&auth.username, Some(&auth.password)),
            None => request,
        };
        let response = request
            .send()
            .await
            .with_context(|| format!("reaching the admin endpoint at {}", self.url))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        let said = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_owned))
            .unwrap_or(text);
        match status.as_u16() {
            401 | 403 => bail!(
                "the admin endpoint at {} refused the credentials ({status}); give the metrics listener's with --username and --password",
                self.url
            ),
            404 if said.trim().is_empty() => bail!(
                "the process at {} serves no admin endpoint ({status}); start it with `--admin`",
                self.url
            ),
            _ => bail!(
                "the admin endpoint at {} answered {status}: {}",
                self.url,
                said.trim()
            ),
        }
    }

    /// A GET of `path`: the response, to read as it comes.
    pub(crate) async fn get(&self, path: &str) -> anyhow::Result<reqwest::Response> {
        self.send(self.http.get(format!("{}{path}", self.url)))
            .await
    }

    /// POSTs `body` as JSON to `path`; the answer's JSON.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> anyhow::Result<serde_json::Value> {
        let request = self
            .http
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body)?);
        let response = self.send(request).await?;
        let body = response
            .bytes()
            .await
            .context("reading the admin endpoint's answer")?;
        serde_json::from_slice(&body).context("reading the admin endpoint's answer")
    }
}
