//! The KMS server `scripts/test` started (moto), and a key on it.

/// The test KMS server's endpoint, from `SLUICE_KMS_ENDPOINT` (set by `scripts/test`, which
/// starts moto). Panics when unset: KMS tests fail loudly rather than skip.
pub fn kms_endpoint() -> String {
    std::env::var("SLUICE_KMS_ENDPOINT").unwrap_or_else(|_| {
        panic!("SLUICE_KMS_ENDPOINT is not set: run the tests with ./scripts/test, which starts a KMS server")
    })
}

/// A KMS client for the test server.
pub async fn kms_client() -> aws_sdk_kms::Client {
    let config = aws_sdk_kms::Config::builder()
        .behavior_version(aws_sdk_kms::config::BehaviorVersion::latest())
        .region(aws_sdk_kms::config::Region::new("us-east-1"))
        .endpoint_url(kms_endpoint())
        .credentials_provider(aws_sdk_kms::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    aws_sdk_kms::Client::from_conf(config)
}

/// Creates a KMS key on the test server; returns its id.
pub async fn kms_key() -> String {
    let out = kms_client()
        .await
        .create_key()
        .description("sluice test")
        .send()
        .await
        .expect("CreateKey on the test KMS");
    out.key_metadata()
        .expect("key metadata")
        .key_id()
        .to_owned()
}
