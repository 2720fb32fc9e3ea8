//! NumPy's `.npy` files: how a user hands tirc its own inputs and takes its
//! outputs (`tirc run --input A=a.npy --output C=c.npy`).
//!
//! The format (numpy.lib.format, versions 1.0 to 3.0): the magic
//! `\x93NUMPY`, a version, the length of a header, and the header, a Python
//! dict literal `{'descr': '<f4', 'fortran_order': False, 'shape': (64,
//! 32), }` padded with spaces to a multiple of 64 bytes and ended by a
//! newline; then the elements, in C order unless `fortran_order`. tirc
//! reads C-ordered little-endian arrays of the types it runs, and writes
//! version 1.0. bfloat16 has no NumPy type of its own: tirc writes and
//! accepts its raw bits as `<u2` (as `ml_dtypes` users view them with
//! `.view(np.uint16)`). The descriptors are the `npy` column of
//! `tirc_ir::dtype::TYPES`.

use crate::data::HostData;
use tirc_ir::DType;

/// An array read from a `.npy` file: its element type, shape and bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub descr: String,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// The `.npy` descriptor of a tirc type, or None for a type without one.
pub fn descr(t: DType) -> Option<&'static str> {
    t.info().map(|i| i.npy)
}

/// The size in bytes of one element of a descriptor such as `<f4`.
fn descr_bytes(d: &str) -> Option<usize> {
    d.get(2..)?.parse().ok()
}

/// Parses the bytes of a `.npy` file.
pub fn parse(bytes: &[u8]) -> Result<Array, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (no \\x93NUMPY magic at its start)".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(format!(".npy format version {v}.{} is not one tirc reads (1.0 to 3.0)", bytes[7])),
    };
    let header = bytes.get(start..start + header_len).ok_or("the .npy header is cut short")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let descr = dict_value(header, "descr").ok_or("the .npy header has no 'descr'")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"').to_string();
    let fortran = dict_value(header, "fortran_order").ok_or("the .npy header has no 'fortran_order'")?;
    if fortran.trim() != "False" {
        return Err("the array is in Fortran order: save it in C order (np.ascontiguousarray)".into());
    }
    let shape = dict_value(header, "shape").ok_or("the .npy header has no 'shape'")?;
    let shape: Vec<usize> = shape
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| format!("the .npy shape has `{s}`, not a size")))
        .collect::<Result<_, _>>()?;
    if descr.starts_with('>') && descr_bytes(&descr) != Some(1) {
        return Err(format!("the array is big-endian ({descr}): save it little-endian (.astype('<{}'))", &descr[1..]));
    }
    let elem = descr_bytes(&descr).ok_or_else(|| format!("the .npy element type `{descr}` is not one tirc reads"))?;
    let n: usize = shape.iter().product();
    let data = &bytes[start + header_len..];
    if data.len() != n * elem {
        return Err(format!(
            "the .npy file holds {} bytes of data, its shape {:?} of {descr} needs {}",
            data.len(),
            shape,
            n * elem
        ));
    }
    Ok(Array { descr, shape, data: data.to_vec() })
}

/// The text after `'key':` in a header dict, up to the next top-level comma.
fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'")).or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

/// The bytes of a version 1.0 `.npy` file of `shape` and element type `t`.
pub fn to_bytes(t: DType, shape: &[usize], d: &HostData) -> Result<Vec<u8>, String> {
    let descr = descr(t).ok_or_else(|| format!("{t} has no .npy type"))?;
    let dims: Vec<String> = shape.iter().map(|s| s.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_text}, }}");
    // Magic (6) + version (2) + length (2) + header + newline: a multiple of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend(d.as_bytes());
    Ok(out)
}

/// The contents of `bytes` (a `.npy` file) for a buffer of type `t` and
/// `shape`, or why they do not fit it.
pub fn host_data(bytes: &[u8], t: DType, shape: &[usize]) -> Result<HostData, String> {
    let a = parse(bytes)?;
    let want = descr(t).ok_or_else(|| format!("{t} buffers cannot be read from .npy"))?;
    // `|b1` and `|i1` are one byte whichever way numpy writes the order mark.
    let same = |x: &str, y: &str| x == y || (x.len() == 3 && y.len() == 3 && x[1..] == y[1..] && x.ends_with('1'));
    if !same(&a.descr, want) {
        return Err(format!("the file holds {} ({}), the buffer is {t} ({want})", numpy_name(&a.descr), a.descr));
    }
    if a.shape != shape {
        return Err(format!("the file's shape is {:?}, the buffer's is {:?}", a.shape, shape));
    }
    let mut d = HostData::zeros(t, shape.iter().product())?;
    d.set_bytes(&a.data);
    Ok(d)
}

/// NumPy's name for a descriptor, for messages.
fn numpy_name(d: &str) -> String {
    let kind = match d.as_bytes().get(1) {
        Some(b'f') => "float",
        Some(b'i') => "int",
        Some(b'u') => "uint",
        Some(b'b') => return "bool".into(),
        Some(b'c') => "complex",
        _ => return d.to_string(),
    };
    match descr_bytes(d) {
        Some(n) => format!("{kind}{}", n * 8),
        None => d.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_type_shape_and_values() {
        let d = HostData::F32(vec![1.0, -2.5, 3.25, 0.0, 7.0, 8.5]);
        let bytes = to_bytes(DType::F32, &[2, 3], &d).unwrap();
        assert_eq!((bytes.len() - 24) % 64, 0, "header padded so that data starts at a multiple of 64");
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let back = host_data(&bytes, DType::F32, &[2, 3]).unwrap();
        assert_eq!(back, d);
        let a = parse(&bytes).unwrap();
        assert_eq!(a.descr, "<f4");
        assert_eq!(a.shape, vec![2, 3]);
    }

    #[test]
    fn one_dimension_is_written_as_a_python_tuple() {
        let bytes = to_bytes(DType::I32, &[3], &HostData::I32(vec![1, 2, 3])).unwrap();
        let header = std::str::from_utf8(&bytes[10..]).unwrap();
        assert!(header.contains("'shape': (3,)"), "{header}");
        assert_eq!(host_data(&bytes, DType::I32, &[3]).unwrap(), HostData::I32(vec![1, 2, 3]));
    }

    #[test]
    fn wrong_type_shape_and_order_are_refused_with_the_reason() {
        let bytes = to_bytes(DType::F64, &[4], &HostData::F64(vec![0.0; 4])).unwrap();
        let e = host_data(&bytes, DType::F32, &[4]).unwrap_err();
        assert!(e.contains("float64") && e.contains("float32"), "{e}");
        let bytes = to_bytes(DType::F32, &[4], &HostData::F32(vec![0.0; 4])).unwrap();
        let e = host_data(&bytes, DType::F32, &[2, 2]).unwrap_err();
        assert!(e.contains("[4]") && e.contains("[2, 2]"), "{e}");
        let mut fortran = bytes.clone();
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        let e = parse(&fortran).unwrap_err();
        assert!(e.contains("Fortran"), "{e}");
        assert!(parse(b"PK\x03\x04 zip").unwrap_err().contains("magic"));
        let cut = &bytes[..bytes.len() - 1];
        assert!(parse(cut).unwrap_err().contains("needs"));
    }

    #[test]
    fn reads_numpy_version_two_headers() {
        // What numpy writes for a header past 65535 bytes; here a short one.
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }\n";
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend(5i64.to_le_bytes());
        bytes.extend((-6i64).to_le_bytes());
        assert_eq!(host_data(&bytes, DType::I64, &[2]).unwrap(), HostData::I64(vec![5, -6]));
    }
}
