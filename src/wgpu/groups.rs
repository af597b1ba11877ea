//! Bind groups, and the recorder's cache of them: an op run again on the same buffers (the
//! pool hands the same buffers to the same sizes, forward after forward) binds the group it
//! bound before instead of creating one, which was a quarter of the CPU of recording a small op.

use super::batch::META_WINDOW;
use super::context::Gpu;
use foldhash::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

/// Entries kept before the cache starts again from empty (a bound on what it holds, for a
/// program that keeps making buffers of new sizes).
const MAX_GROUPS: usize = 4096;

/// The bind group of one dispatch: the metadata window of `arena`, then `buffers`.
pub(crate) fn bind_group(
    gpu: &Gpu,
    pipeline: &super::Pipeline,
    arena: &wgpu::Buffer,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: arena,
            offset: 0,
            size: wgpu::BufferSize::new(META_WINDOW),
        }),
    }];
    for (i, b) in buffers.iter().enumerate() {
        entries.push(wgpu::BindGroupEntry { binding: i as u32 + 1, resource: b.as_entire_binding() });
    }
    gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.layout,
        entries: &entries,
    })
}

/// One cached group: its layout, the arena and buffers it binds, in binding order.
struct Entry {
    layout: wgpu::BindGroupLayout,
    buffers: Vec<wgpu::Buffer>,
    group: wgpu::BindGroup,
}

/// Bind groups by layout and buffers. A group holds its buffers: the entries of a buffer the
/// pool lets go of are dropped before it is destroyed ([`BindGroups::forget`]), so a destroyed
/// buffer is never bound again, and a buffer id is never taken for another while an entry
/// holds it.
#[derive(Default)]
pub(crate) struct BindGroups {
    by_hash: HashMap<u64, Vec<Entry>>,
    len: usize,
}

impl BindGroups {
    /// The group binding `arena`'s metadata window and `buffers` for `pipeline`: the cached one,
    /// or a new one, then kept.
    pub(crate) fn get(
        &mut self,
        gpu: &Gpu,
        pipeline: &super::Pipeline,
        arena: &wgpu::Buffer,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let mut h = foldhash::fast::FixedState::default().build_hasher();
        pipeline.layout.hash(&mut h);
        arena.hash(&mut h);
        buffers.iter().for_each(|b| b.hash(&mut h));
        let hash = h.finish();
        let same = |e: &&Entry| {
            e.layout == pipeline.layout
                && e.buffers.len() == buffers.len() + 1
                && e.buffers[0] == *arena
                && e.buffers[1..].iter().eq(buffers.iter().copied())
        };
        if let Some(e) = self.by_hash.get(&hash).and_then(|v| v.iter().find(same)) {
            return e.group.clone();
        }
        let group = bind_group(gpu, pipeline, arena, buffers);
        if self.len >= MAX_GROUPS {
            self.by_hash.clear();
            self.len = 0;
        }
        let buffers = std::iter::once(arena).chain(buffers.iter().copied()).cloned().collect();
        let entry = Entry { layout: pipeline.layout.clone(), buffers, group: group.clone() };
        self.by_hash.entry(hash).or_default().push(entry);
        self.len += 1;
        group
    }

    /// Drops every group that binds one of `gone` (buffers about to be destroyed).
    pub(crate) fn forget(&mut self, gone: &[wgpu::Buffer]) {
        if gone.is_empty() || self.len == 0 {
            return;
        }
        self.by_hash.retain(|_, v| {
            v.retain(|e| !e.buffers.iter().any(|b| gone.contains(b)));
            !v.is_empty()
        });
        self.len = self.by_hash.values().map(Vec::len).sum();
    }
}
