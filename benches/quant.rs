#[path = "common.rs"]
mod common;

fn main() {
    common::run(rocm_wgpu_ops::spec::Family::Quant);
}
