//! What the Vulkan driver made of the WGSL kernels: each kernel whose name contains the filter is
//! translated to SPIR-V by naga (as wgpu does, without bounds checks or workgroup zeroing, the
//! settings the crate builds its kernels with), built into a compute pipeline on the first
//! Vulkan device that reports `VK_KHR_pipeline_executable_properties`, and the driver's own
//! statistics printed: registers, spills, shared memory and the like, whatever the driver names
//! (NVIDIA: register count and binary size; Mesa: instruction and spill counts). A profiler's
//! first question, on a host whose profilers do not read Vulkan kernels.
//!
//! `cargo run --release --example kernel_stats -- [FILTER] [--ir DIR]` (`--ir`: the driver's
//! internal representations of each kernel, where it gives them, one file a kernel).

use ash::vk;
use rocm_wgpu_ops::wgpu::{Caps, shader_variants};
use std::collections::BTreeMap;
use std::error::Error;
use std::ffi::CString;

type Res<T> = Result<T, Box<dyn Error>>;

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let (mut filter, mut ir_dir) = (String::new(), None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ir" => ir_dir = Some(args.next().ok_or("--ir needs a directory")?),
            _ => filter = a,
        }
    }
    let gpu = unsafe { Gpu::open()? };
    println!("{}", gpu.name);
    let caps = Caps { f16: true, f64: gpu.f64, i64: gpu.i64, subgroup: true };
    let mut shown = 0;
    for (name, spec) in shader_variants(caps) {
        if !name.contains(&filter) {
            continue;
        }
        let spec = match spec {
            Ok(s) => s,
            Err(e) => {
                println!("{name}: no kernel here ({e})");
                continue;
            }
        };
        match unsafe { gpu.stats(&spec.source(), ir_dir.as_deref().map(|d| format!("{d}/{name}"))) } {
            Ok(stats) => println!("{name}: {}", stats.join(", ")),
            Err(e) => println!("{name}: {e}"),
        }
        shown += 1;
    }
    println!("{shown} kernels");
    Ok(())
}

/// A Vulkan device opened for pipeline statistics, with every feature it has enabled.
struct Gpu {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    stats: ash::khr::pipeline_executable_properties::Device,
    name: String,
    f64: bool,
    i64: bool,
}

impl Gpu {
    unsafe fn open() -> Res<Gpu> {
        unsafe {
            let entry = ash::Entry::load()?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let instance = entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)?;
            let wanted = ash::khr::pipeline_executable_properties::NAME;
            let coop = ash::khr::cooperative_matrix::NAME;
            for pd in instance.enumerate_physical_devices()? {
                let exts = instance.enumerate_device_extension_properties(pd)?;
                let has = |n: &std::ffi::CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
                let props = instance.get_physical_device_properties(pd);
                let name = props.device_name_as_c_str()?.to_string_lossy().into_owned();
                if !has(wanted) {
                    println!("{name}: no {wanted:?}, skipped");
                    continue;
                }
                let mut names = vec![wanted.as_ptr()];
                if has(coop) {
                    names.push(coop.as_ptr());
                }
                // Every feature the device has, as wgpu asks for the ones the crate uses.
                let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
                let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
                let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
                let mut fc = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
                let mut fe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
                let mut f2 = vk::PhysicalDeviceFeatures2::default()
                    .push_next(&mut f11)
                    .push_next(&mut f12)
                    .push_next(&mut f13)
                    .push_next(&mut fe);
                if has(coop) {
                    f2 = f2.push_next(&mut fc);
                }
                instance.get_physical_device_features2(pd, &mut f2);
                let (f64, i64) = (f2.features.shader_float64 != 0, f2.features.shader_int64 != 0);
                let family = instance
                    .get_physical_device_queue_family_properties(pd)
                    .iter()
                    .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
                    .ok_or("no compute queue")? as u32;
                let queue = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&[1.0])];
                let info = vk::DeviceCreateInfo::default()
                    .queue_create_infos(&queue)
                    .enabled_extension_names(&names)
                    .push_next(&mut f2);
                let device = instance.create_device(pd, &info, None)?;
                let stats = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
                return Ok(Gpu { _entry: entry, instance, device, stats, name, f64, i64 });
            }
            Err("no Vulkan device reports pipeline statistics".into())
        }
    }

    /// The statistics of each executable of the pipeline built from `wgsl`, as `name=value`.
    unsafe fn stats(&self, wgsl: &str, ir: Option<String>) -> Res<Vec<String>> {
        let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| e.emit_to_string(wgsl))?;
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
            .validate(&module)
            .map_err(|e| e.emit_to_string(wgsl))?;
        let unchecked = naga::proc::BoundsCheckPolicy::Unchecked;
        let options = naga::back::spv::Options {
            lang_version: (1, 6),
            capabilities: None,
            bounds_check_policies: naga::proc::BoundsCheckPolicies {
                index: unchecked,
                buffer: unchecked,
                image_load: unchecked,
                binding_array: unchecked,
            },
            zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
            force_loop_bounding: false,
            ..Default::default()
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, None)?;
        let entry = CString::new(module.entry_points.first().ok_or("no entry point")?.name.clone())?;
        // The bindings, by group, from the module's globals.
        let mut groups: BTreeMap<u32, Vec<vk::DescriptorSetLayoutBinding>> = BTreeMap::new();
        for (_, g) in module.global_variables.iter() {
            let (Some(b), ty) = (
                &g.binding,
                match g.space {
                    naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                    _ => vk::DescriptorType::STORAGE_BUFFER,
                },
            ) else {
                continue;
            };
            groups.entry(b.group).or_default().push(
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b.binding)
                    .descriptor_type(ty)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE),
            );
        }
        let d = &self.device;
        unsafe {
            let last = groups.keys().next_back().map_or(0, |g| g + 1);
            let mut sets = vec![];
            for g in 0..last {
                let bindings = groups.get(&g).map_or(&[][..], Vec::as_slice);
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
                sets.push(d.create_descriptor_set_layout(&info, None)?);
            }
            let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None)?;
            let shader = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(shader)
                .name(&entry);
            let mut flags = vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
            if ir.is_some() {
                flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
            }
            let info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout).flags(flags);
            let built = d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None);
            let result = match built {
                Ok(p) => self.read(p[0], ir).inspect(|_| d.destroy_pipeline(p[0], None)),
                Err((_, e)) => Err(format!("pipeline: {e}").into()),
            };
            d.destroy_shader_module(shader, None);
            d.destroy_pipeline_layout(layout, None);
            for s in sets {
                d.destroy_descriptor_set_layout(s, None);
            }
            result
        }
    }

    unsafe fn read(&self, pipeline: vk::Pipeline, ir: Option<String>) -> Res<Vec<String>> {
        let mut out = vec![];
        unsafe {
            let execs =
                self.stats.get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))?;
            for i in 0..execs.len() as u32 {
                let exec = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i);
                for s in self.stats.get_pipeline_executable_statistics(&exec)? {
                    let value = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => format!("{:.3}", s.value.f64),
                    };
                    out.push(format!("{}={value}", s.name_as_c_str()?.to_string_lossy()));
                }
                if let Some(path) = &ir {
                    self.write_ir(&exec, &format!("{path}.{i}"))?;
                }
            }
        }
        Ok(out)
    }

    /// The driver's internal representations of one executable, text ones only, into `path`.
    fn write_ir(&self, exec: &vk::PipelineExecutableInfoKHR, path: &str) -> Res<()> {
        let fp = self.stats.fp();
        let mut count = 0u32;
        // Each call with pointers into vectors of `count` entries (or null), as the spec asks.
        let call = |count: &mut u32, reps: *mut vk::PipelineExecutableInternalRepresentationKHR| unsafe {
            (fp.get_pipeline_executable_internal_representations_khr)(self.device.handle(), exec, count, reps).result()
        };
        call(&mut count, std::ptr::null_mut())?;
        let mut reps = vec![vk::PipelineExecutableInternalRepresentationKHR::default(); count as usize];
        call(&mut count, reps.as_mut_ptr())?;
        // Sizes known: room for each text, then read again.
        let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
        for (r, b) in reps.iter_mut().zip(&mut bufs) {
            r.p_data = b.as_mut_ptr().cast();
        }
        call(&mut count, reps.as_mut_ptr())?;
        let mut text = String::new();
        for (r, b) in reps.iter().zip(&bufs) {
            let name = r.name_as_c_str()?.to_string_lossy();
            if r.is_text != 0 {
                let body = String::from_utf8_lossy(b);
                text.push_str(&format!("== {name}\n{}\n", body.trim_end_matches('\0')));
            } else {
                text.push_str(&format!("== {name}: {} bytes of binary\n", b.len()));
            }
        }
        std::fs::write(path, text)?;
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
