//! `otel_metrics` (formerly `otel_metrics_raw_processor`): makes each OTLP metric data point
//! Data Prepper's metric document, as its `OtelMetricsRawProcessorConfig`.

use serde::Deserialize;

use super::ProcessorConfig;
use crate::error::Errors;
use crate::location::join;

/// ```yaml
/// - otel_metrics:
///     calculate_histogram_buckets: true
///     calculate_exponential_histogram_buckets: true
///     exponential_histogram_max_allowed_scale: 10
///     flatten_attributes: true
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelMetrics {
    /// Whether the attributes of a data point (`metric.attributes.*`), its resource
    /// (`resource.attributes.*`) and its instrumentation scope (`instrumentationScope.*`) are
    /// keys of the document itself (`true`), or gathered in one object at `attributes`
    /// (`false`). Default true: Data Prepper's source (`flattenAttributesFlag = true`); its
    /// documentation's table says `False`, and the source wins.
    #[serde(default = "yes")]
    pub flatten_attributes: bool,
    /// Whether a histogram's document has `buckets` (`[{min, max, count}]`, made from
    /// `bucketCountsList` and `explicitBounds`, the outer bounds ±3.4028234663852886E38).
    /// Default true.
    #[serde(default = "yes")]
    pub calculate_histogram_buckets: bool,
    /// Whether an exponential histogram's document has `positiveBuckets` and
    /// `negativeBuckets` (`[{min, max, count}]`, made from `positive`/`negative`, their
    /// offset and `scale`). Default true.
    #[serde(default = "yes")]
    pub calculate_exponential_histogram_buckets: bool,
    /// With `calculate_exponential_histogram_buckets`, an exponential histogram data point
    /// whose scale is beyond this (either sign: `-11` is beyond `10`) is dropped, and logged.
    /// Default 10.
    #[serde(default = "max_allowed_scale")]
    pub exponential_histogram_max_allowed_scale: i32,
}

const fn yes() -> bool {
    true
}

/// Data Prepper's `DEFAULT_EXPONENTIAL_HISTOGRAM_MAX_ALLOWED_SCALE`.
const fn max_allowed_scale() -> i32 {
    10
}

impl ProcessorConfig for OtelMetrics {
    fn check(&self, path: &str, errors: &mut Errors) {
        let scale = self.exponential_histogram_max_allowed_scale;
        if scale < 0 {
            // Data Prepper takes it and then drops every exponential histogram.
            let key = join(path, "exponential_histogram_max_allowed_scale");
            errors.at(
                &key,
                format!(
                    "`{key}` is {scale}; a scale is compared by its absolute value, so give 0 \
                     or more (default {})",
                    max_allowed_scale()
                ),
            );
        }
    }
}
