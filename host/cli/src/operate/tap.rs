//! `sluice tap`: a live sample of a running pipeline's events at one point, one JSON line
//! each, from the admin endpoint (`sluice_pipeline::operate::tap`).

use std::io::Write as _;

use anyhow::{Context as _, bail};

use super::{Reach, Remote};

#[derive(clap::Args)]
pub(crate) struct TapArgs {
    /// The pipeline's name.
    pipeline: String,
    /// The data dir of the running process, as `sluice run --data-dir` had it.
    #[arg(long, default_value = "./data")]
    data_dir: std::path::PathBuf,
    /// Where: `deserializer` (default: the events it made), `processor NAME` (as that processor
    /// left them) or `sink NAME` (as that sink takes them; its type or name).
    #[arg(long, num_args = 1..=2, value_names = ["STAGE", "NAME"])]
    stage: Vec<String>,
    /// Stop after this many events (default: until interrupted).
    #[arg(long)]
    limit: Option<u64>,
    #[command(flatten)]
    remote: Remote,
}

pub(crate) fn run(args: TapArgs) -> anyhow::Result<()> {
    let mut query = match args.stage.as_slice() {
        [] => "stage=deserializer".to_owned(),
        [stage] if stage == "deserializer" => "stage=deserializer".to_owned(),
        [stage, name] if stage == "processor" || stage == "sink" => {
            let name: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
            format!("stage={stage}&name={name}")
        }
        other => bail!(
            "--stage {}: give `deserializer`, `processor NAME` or `sink NAME`",
            other.join(" ")
        ),
    };
    if let Some(limit) = args.limit {
        query.push_str(&format!("&limit={limit}"));
    }
    let Reach::Running(client) = super::reach(&args.data_dir, &args.remote)? else {
        bail!(
            "no sluice runs on the data dir `{}`: tap reads a running process",
            args.data_dir.display()
        );
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let path = format!("/admin/pipelines/{}/tap?{query}", args.pipeline);
        let mut response = client.get(&path).await?;
        let mut out = std::io::stdout().lock();
        while let Some(chunk) = response
            .chunk()
            .await
            .context("reading the tapped events")?
        {
            out.write_all(&chunk)?;
            out.flush()?;
        }
        Ok(())
    })
}
