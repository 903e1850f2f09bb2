//! The work queue shared by devices ([`autotune::tuning::queue`]) writing a real database:
//! simulated devices of different speeds save each unit's winner under the database's lock,
//! one fails mid-run, and the database ends whole, each shape once, from a device that lived.

use crate::common::{entry, gpu_record};
use autotune::db::{Database, Entry, Producer};
use autotune::problem::Op;
use autotune::tuning::queue::{self, Fault, Lane, Quiet, Unit};
use std::time::Duration;

fn producer(device: usize) -> Producer {
    Producer {
        host: "node01".to_string(),
        device: device as u32,
        pci_bus_id: None,
        uuid: Some(format!("GPU-{device}")),
        shard: None,
    }
}

type Worker<'a> = Box<dyn FnMut(usize, &String) -> Result<usize, Fault<String>> + 'a>;

#[test]
fn a_device_lost_mid_run_leaves_its_shapes_to_the_others_and_the_database_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tuning.toml");
    let gpu = "NVIDIA H100 80GB HBM3";
    let shapes: Vec<String> = (1..=24)
        .map(|i| format!("{}x{}x{}", 64 * i, 32 * (25 - i), 16 * (i % 7 + 1)))
        .collect();
    let lanes: Vec<Lane> = (0..3)
        .map(|d| Lane {
            name: format!("device {d}"),
            group: gpu.to_string(),
        })
        .collect();
    let units: Vec<Unit<String>> = shapes
        .iter()
        .map(|s| Unit {
            group: gpu.to_string(),
            cost: 1.0,
            work: s.clone(),
        })
        .collect();
    let db_path = &db;
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        let mut done = 0;
        Ok(Box::new(move |_, shape: &String| {
            std::thread::sleep(Duration::from_millis([2, 5, 3][lane]));
            // Device 1 falls off the bus during its fourth shape, before saving it.
            if lane == 1 && done == 3 {
                return Err(Fault::DeviceLost(format!(
                    "device 1: CUDA_ERROR_ILLEGAL_ADDRESS during {shape}"
                )));
            }
            let e = Entry {
                produced_by: Some(producer(lane)),
                ..entry(gpu, Op::Gemm, shape)
            };
            Database::update_file(db_path, |d| {
                d.upsert_gpu(gpu_record(gpu));
                d.upsert(e);
                Ok(())
            })
            .map_err(|e| Fault::Stop(e.to_string()))?;
            done += 1;
            Ok(lane)
        }))
    };
    let out = queue::run(&lanes, units, &open, &|| false, &Quiet);
    assert!(out.unfinished.is_empty() && out.failed.is_empty() && out.stopped.is_none());
    assert_eq!(out.lost.len(), 1);
    assert!(out.lost[0].1.contains("ILLEGAL_ADDRESS"));
    assert_eq!(out.usage.busy[1].units, 3);
    let saved = Database::load(&db).unwrap();
    assert_eq!(saved.entries.len(), shapes.len(), "one entry per shape");
    for s in &shapes {
        let e = saved
            .entries
            .iter()
            .find(|e| e.shape == *s)
            .unwrap_or_else(|| panic!("{s} missing"));
        let by = e.produced_by.as_ref().unwrap().device as usize;
        assert_eq!(
            out.results[shapes.iter().position(|x| x == s).unwrap()],
            Some(by)
        );
    }
    // The lost device saved only the three shapes it finished.
    assert_eq!(
        saved
            .entries
            .iter()
            .filter(|e| e.produced_by.as_ref().unwrap().device == 1)
            .count(),
        3
    );
}
