//! Compiled pipelines kept between processes: wgpu's `PipelineCache` (Vulkan's pipeline cache,
//! on adapters with `Features::PIPELINE_CACHE`), loaded from disk when the device opens and
//! written back when it is dropped, in the native kernel cache's directory and file format
//! (`RWO_KERNEL_CACHE`, `off` disables it: `crate::native::cache`). A missing, stale or damaged
//! file is an empty cache (the driver checks the data it is given, and wgpu falls back to an
//! empty cache on data it refuses); a failed write leaves the old file.

use super::context::Gpu;
use crate::native::cache::{Cache, Key};
use std::sync::atomic::{AtomicBool, Ordering};

/// The device's pipeline cache and where it is kept.
pub(crate) struct DiskPipelineCache {
    cache: wgpu::PipelineCache,
    store: Cache,
    key: Key,
    /// Whether a pipeline was built since the data was read or written.
    grown: AtomicBool,
}

impl DiskPipelineCache {
    /// The cache of `gpu` with what an earlier process stored, or `None` where the adapter has
    /// no pipeline cache or `RWO_KERNEL_CACHE=off`.
    pub fn open(gpu: &Gpu) -> Option<DiskPipelineCache> {
        Self::open_in(gpu, Cache::from_env())
    }

    /// [`DiskPipelineCache::open`] with the cache `store`.
    fn open_in(gpu: &Gpu, store: Cache) -> Option<DiskPipelineCache> {
        let adapter = wgpu::util::pipeline_cache_key(&gpu.info)?;
        if !gpu.has(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        store.dir()?;
        // The crate's version and wgpu's: their shaders and SPIR-V, and so the pipelines, change with them.
        let compiler = format!("wgpu 30, {} {}", gpu.info.driver, gpu.info.driver_info);
        let key = Key::new("wgpu", "pipelines", &adapter, &compiler, &[], &[env!("CARGO_PKG_VERSION")]);
        let data = store.get(&key);
        // SAFETY: `data` is what `get_data` of a cache of this adapter and driver gave an earlier
        // process (the key holds both), read back whole (the file's checksum); with `fallback`
        // wgpu makes an empty cache of data the driver does not accept.
        let cache = unsafe {
            gpu.device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("rocm-wgpu-ops pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        Some(DiskPipelineCache { cache, store, key, grown: AtomicBool::new(false) })
    }

    /// The cache a new pipeline is built through (it then holds that pipeline).
    pub fn for_build(&self) -> &wgpu::PipelineCache {
        self.grown.store(true, Ordering::Relaxed);
        &self.cache
    }

    /// Writes the cache to disk if it grew since it was read or last written.
    pub fn save(&self) {
        if self.grown.swap(false, Ordering::Relaxed)
            && let Some(data) = self.cache.get_data()
        {
            self.store.put(&self.key, &data);
        }
    }

    /// Where the cache is kept, for `Device::info`.
    pub fn describe(&self) -> String {
        format!("{} (RWO_KERNEL_CACHE)", self.store)
    }
}

impl Drop for DiskPipelineCache {
    fn drop(&mut self) {
        self.save();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a do-nothing compute pipeline through `cache`.
    fn build(gpu: &Gpu, cache: &DiskPipelineCache) {
        let src = "@compute @workgroup_size(1) fn main() {}";
        let module = gpu.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(src.into()),
        });
        let _pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: Some(cache.for_build()),
        });
    }

    #[test]
    fn pipelines_built_in_one_process_are_on_disk_for_the_next() {
        // Only an adapter with a pipeline cache (Vulkan) can keep one; lavapipe in CI has it.
        let Ok(gpu) = pollster::block_on(Gpu::open(crate::wgpu::Pick::Name(None), wgpu::Features::empty())) else {
            return;
        };
        if !gpu.has(wgpu::Features::PIPELINE_CACHE) {
            return;
        }
        let dir = std::env::temp_dir().join(format!("rwo-pipelines-{}", std::process::id()));
        let store = Cache::at(&dir);
        let first = DiskPipelineCache::open_in(&gpu, store.clone()).expect("a cache in a directory");
        let key = first.key.clone();
        assert_eq!(store.get(&key), None, "nothing stored before");
        drop(first);
        assert_eq!(store.get(&key), None, "a cache that built nothing writes nothing");
        let second = DiskPipelineCache::open_in(&gpu, store.clone()).expect("a cache in a directory");
        build(&gpu, &second);
        drop(second);
        let data = store.get(&key).expect("written when dropped");
        assert!(!data.is_empty());
        // The next process starts from it, and writes it back only once it grows.
        let third = DiskPipelineCache::open_in(&gpu, store.clone()).expect("a cache in a directory");
        let loaded = third.cache.get_data().map_or(0, |d| d.len());
        assert!(loaded >= data.len(), "the next process has the pipeline: {loaded} bytes of {}", data.len());
        drop(third);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(DiskPipelineCache::open_in(&gpu, Cache::off()).is_none(), "RWO_KERNEL_CACHE=off");
    }
}
