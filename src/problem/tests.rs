use super::*;

#[test]
fn parses_gemm_and_gemv_forms() {
    assert_eq!(
        Shape::parse(Op::Gemm, "2048x1024X512").unwrap(),
        Shape::mnk(2048, 1024, 512)
    );
    assert_eq!(
        Shape::parse(Op::Gemv, "4096x100").unwrap(),
        Shape::mnk(4096, 1, 100)
    );
    assert_eq!(
        Shape::parse(Op::Gemv, "7x1x9").unwrap(),
        Shape::mnk(7, 1, 9)
    );
    assert_eq!(
        Shape::parse(Op::Gemm, " 3 x 5 x 7 ")
            .unwrap()
            .label(Op::Gemm),
        "3x5x7"
    );
}

#[test]
fn rejects_bad_shapes_with_reasons() {
    assert!(matches!(
        Shape::parse(Op::Gemm, "2048x2048"),
        Err(ShapeError::Malformed { .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "axbxc"),
        Err(ShapeError::Malformed { .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "1x1x"),
        Err(ShapeError::Malformed { .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "0x4x4"),
        Err(ShapeError::NotPositive { dim: 'M', .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "4x-4x4"),
        Err(ShapeError::NotPositive { dim: 'N', .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "4x4x99999999999999999999999"),
        Err(ShapeError::Overflow { dim: 'K', .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "100000x100000x1"),
        Err(ShapeError::TooLarge {
            what: "C (MxN)",
            ..
        })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemv, "4x2x4"),
        Err(ShapeError::GemvN { n: 2, .. })
    ));
    // Each matrix fits, but K would overflow the kernels' 32-bit K loop.
    let err = Shape::parse(Op::Gemm, "1x1x2147483647").unwrap_err();
    assert!(
        matches!(
            err,
            ShapeError::DimTooLarge {
                dim: 'K',
                value: 2147483647,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("2^30"), "{err}");
    assert!(matches!(
        Shape::parse(Op::Gemv, "1073741825x1"),
        Err(ShapeError::DimTooLarge { dim: 'M', .. })
    ));
    assert_eq!(
        Shape::parse(Op::Gemv, "1x1073741824").unwrap(),
        Shape::mnk(1, 1, MAX_DIM)
    );
    assert!(matches!(
        Shape::new(Op::Gemm, 1, 1, MAX_DIM + 1),
        Err(ShapeError::DimTooLarge { dim: 'K', .. })
    ));
    let msg = Shape::parse(Op::Gemm, "12").unwrap_err().to_string();
    assert!(msg.contains("MxNxK"), "{msg}");
}

#[test]
fn forms_parse_label_and_lay_out() {
    let s = Shape::parse(Op::Gemm, "64x48x32:TN:b8:beta:pad").unwrap();
    assert_eq!(
        s.form,
        Form {
            layout: Layout::Tn,
            padded: true,
            beta: true,
            scaled: false,
            batch: 8
        }
    );
    assert_eq!(s.label(Op::Gemm), "64x48x32:tn:b8:beta:pad");
    assert_eq!(Shape::parse(Op::Gemm, &s.label(Op::Gemm)).unwrap(), s);
    assert!(Shape::parse(Op::Gemm, "8x8x8").unwrap().form.is_plain());
    // A is stored K x M for TN: lda pads M = 64 past the next multiple of 64.
    let st = s.strides(Op::Gemm);
    assert_eq!((st.lda, st.ldb, st.ldc), (128, 64, 64));
    assert_eq!(st.stride_a, 31 * 128 + 64);
    assert_eq!(st.stride_c, 63 * 64 + 48);
    assert_eq!(s.lens(Op::Gemm)[0], 8 * st.stride_a);
    assert_eq!(s.flops(), 2.0 * 64.0 * 48.0 * 32.0 * 8.0);
    // Packed NT: B stored N x K.
    let nt = Shape::parse(Op::Gemm, "64x48x32:nt").unwrap();
    assert_eq!(nt.stored(Op::Gemm), [(64, 32), (48, 32), (64, 48)]);
    let st = nt.strides(Op::Gemm);
    assert_eq!((st.lda, st.ldb, st.ldc), (32, 32, 48));
    // gemv: t is y = A^T x (x has M elements, y K).
    let v = Shape::parse(Op::Gemv, "100x30:t:b2:alpha").unwrap();
    assert_eq!(v.label(Op::Gemv), "100x30:t:b2:alpha");
    assert_eq!(v.lens(Op::Gemv), [2 * 3000, 2 * 100, 2 * 30]);
    assert!(v.form.scaled);
    // Tuning calls: alpha 1, beta 0 for the plain form only.
    let plain = Shape::mnk(4, 4, 4).tuning_call(Op::Gemm);
    assert_eq!((plain.alpha, plain.beta), (1.0, 0.0));
    let call = s.tuning_call(Op::Gemm);
    assert_eq!((call.alpha, call.beta, call.batch), (0.75, 0.5, 8));
    // Errors say what is accepted.
    let e = Shape::parse(Op::Gemm, "8x8x8:xx").unwrap_err();
    assert!(matches!(e, ShapeError::BadTag { .. }), "{e}");
    assert!(e.to_string().contains("nn, nt, tn, tt"), "{e}");
    assert!(matches!(
        Shape::parse(Op::Gemm, "8x8x8:b0"),
        Err(ShapeError::BadBatch { .. })
    ));
    assert!(matches!(
        Shape::parse(Op::Gemm, "8x8x8:b99999999999"),
        Err(ShapeError::BadBatch { .. })
    ));
    assert!(Shape::parse(Op::Gemv, "8x8:nt").is_err());
    assert!(matches!(
        Layout::parse(Op::Gemv, "tt"),
        Err(ShapeError::UnknownLayout { .. })
    ));
    assert_eq!(Layout::parse(Op::Gemv, "T").unwrap(), Layout::Tn);
    assert_eq!(Layout::Tn.name(Op::Gemv), "t");
    assert_eq!(Layout::from_trans(true, true), Layout::Tt);
}

#[test]
fn counts_work() {
    let s = Shape::parse(Op::Gemm, "2x3x4").unwrap();
    assert_eq!(s.flops(), 48.0);
    assert_eq!(s.min_bytes(Op::Gemm), 4.0 * (8.0 + 12.0 + 6.0));
    let v = Shape::parse(Op::Gemv, "10x20").unwrap();
    assert_eq!(v.min_bytes(Op::Gemv), 4.0 * (200.0 + 20.0 + 10.0));
    assert_eq!("SGEMV".parse::<Op>().unwrap(), Op::Gemv);
    assert_eq!(Shape::new(Op::Gemm, 2, 3, 4).unwrap(), s);
    assert!(matches!(
        Shape::new(Op::Gemm, 2, 0, 4),
        Err(ShapeError::NotPositive { dim: 'N', .. })
    ));
    assert!(matches!(
        Shape::new(Op::Gemv, 2, 2, 4),
        Err(ShapeError::GemvN { .. })
    ));
    assert!(matches!(
        Shape::new(Op::Gemm, 1 << 20, 1 << 20, 1),
        Err(ShapeError::TooLarge { .. })
    ));
    assert!("conv".parse::<Op>().is_err());
}

#[test]
fn a_batched_grid_serves_batched_problems_within_reach_of_its_counts() {
    let form = |batch: u64| Form {
        layout: Layout::Tt,
        batch,
        ..Form::PLAIN
    };
    let grid = form(16);
    // Counts 8 to 64: half the smallest to twice the largest.
    for (batch, served) in [(4, true), (1, false), (3, false), (128, true), (129, false)] {
        assert_eq!(
            form(batch).served_by_counts(&grid, 8..=64),
            served,
            "batch {batch}"
        );
    }
    // One product per call is a form of its own, either way round.
    assert!(!form(1).served_by_counts(&form(16), 1..=64));
    assert!(!form(2).served_by_counts(&form(1), 1..=1));
    assert!(form(1).served_by(&form(1)));
    // A grid of one count reaches half and twice it; the layout still has to match.
    assert!(form(8).served_by(&grid) && form(32).served_by(&grid));
    assert!(!form(33).served_by(&grid));
    let nn = Form {
        layout: Layout::Nn,
        ..form(16)
    };
    assert!(!nn.served_by_counts(&grid, 8..=64));
}
