//! The `bounded_blocking` buffer from its config: `sluice_buffer`'s in-memory buffer.

use std::path::Path;
use std::sync::Arc;

use sluice_buffer::Buffer;
use sluice_buffer::memory::MemoryBuffer;

use super::{BufferError, BuildBuffer};

impl BuildBuffer for sluice_config::BoundedBlocking {
    async fn build(
        &self,
        p: &sluice_config::Pipeline,
        _data_dir: &Path,
    ) -> Result<Arc<dyn Buffer>, BufferError> {
        Ok(Arc::new(MemoryBuffer::new(
            &p.name,
            self.buffer_size,
            self.batch_size,
            p.delay,
        )))
    }
}
