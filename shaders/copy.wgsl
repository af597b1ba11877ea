// Copies, fills and arange. `param(k)` (generated) decodes scalar k of the metadata.

// Element i of a strided x to element OFF + i of y, OFF a whole number of y's words
// (md[EXTRA] = OFF / Y_EPW).
// @kernel strided
@compute @workgroup_size(WG)
fn strided(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    let base = md[EXTRA] * Y_EPW;
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(base + i, x_load(x_at(i)));
        }
    }
    y_flush(md[EXTRA] + w);
}

// Element i of a strided x to element OFF + i of y (md[EXTRA] = OFF), any OFF.
// @kernel strided_any
@compute @workgroup_size(WG)
fn strided_any(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if (i >= md[0]) {
        return;
    }
    y_store(md[EXTRA] + i, x_load(x_at(i)));
}

// Rows of cols elements; md[EXTRA..] = cols, src stride, dst stride, src offset, dst offset.
// @kernel copy2d
@compute @workgroup_size(WG)
fn copy2d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat_id(gid, nwg);
    if (e >= md[0]) {
        return;
    }
    let cols = md[EXTRA];
    let r = e / cols;
    let c = e % cols;
    y_store(md[EXTRA + 4u] + r * md[EXTRA + 2u] + c, x_load(md[EXTRA + 3u] + r * md[EXTRA + 1u] + c));
}

// param(0) into every element of a strided y.
// @kernel fill
@compute @workgroup_size(WG)
fn fill(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    if (i >= md[0]) {
        return;
    }
    y_store(y_at(i), param(0u));
}

// y[i] = param(0) + i * param(1); the step is generated as `arange_at(i)`.
// @kernel arange
@compute @workgroup_size(WG)
fn arange(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = flat_id(gid, nwg);
    let n = md[0];
    let first = w * Y_EPW;
    if (first >= n) {
        return;
    }
    for (var k = 0u; k < Y_EPW; k++) {
        let i = first + k;
        if (i < n) {
            y_set(i, arange_at(i));
        }
    }
    y_flush(w);
}

// Four elements per invocation: element i of x to element OFF + i of y (meta[EXTRA] = OFF,
// a multiple of 4), with vector stores.
// @kernel strided_v4
@compute @workgroup_size(WG)
fn strided_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            y_set4(md[EXTRA] + i, x_get4(i));
        }
    }
}

// param(0) into elements OFF.. OFF + n of y (meta[EXTRA + 3] = OFF, a multiple of 4).
// @kernel fill_v4
@compute @workgroup_size(WG)
fn fill_v4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let v = param(0u);
    let stride = nwg.x * nwg.y * WG * 4u;
    for (var u = 0u; u < UNROLL; u++) {
        let i = flat_id(gid, nwg) * 4u + u * stride;
        if (i < md[0]) {
            y_set4(md[EXTRA + 3u] + i, vec4(v, v, v, v));
        }
    }
}
