//! Independent units of work (a coverage run's pool shapes and grid points, an evaluation's
//! problems) on several GPUs of one model through the shared work queue
//! ([`crate::tuning::queue`]): each device takes the next unit when it is free. One device is
//! the same with one lane.

use crate::cuda::device::{Device, DeviceError};
use crate::gpu::DeviceInfo;
use crate::tuning::queue::{self, Fault, Lane, Quiet, Unit, Usage};

/// Why a set of devices cannot run a measurement together.
#[derive(Debug, thiserror::Error)]
pub enum DevicesError {
    /// A device could not be opened.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The devices are of different GPU models: a coverage or an evaluation is of one model.
    #[error("device {first} is a {first_name} but device {other} is a {other_name}: a coverage or an evaluation measures one GPU model; run it once per model, with the devices of that model")]
    Mixed {
        /// The first device.
        first: usize,
        /// Its model.
        first_name: String,
        /// A device of another model.
        other: usize,
        /// Its model.
        other_name: String,
    },
    /// No device was given.
    #[error("no device to run on")]
    Empty,
}

/// Devices of one GPU model, checked once: each is opened again in its own thread to run.
#[derive(Debug, Clone)]
pub struct Devices {
    ordinals: Vec<usize>,
    info: DeviceInfo,
}

impl Devices {
    /// Opens `ordinals` (to read what they are) and checks they are one GPU model.
    pub fn open(ordinals: &[usize]) -> Result<Devices, DevicesError> {
        let mut info: Option<DeviceInfo> = None;
        for &d in ordinals {
            let dev = Device::open(d)?;
            match &info {
                None => info = Some(dev.info.clone()),
                Some(i) if i.name != dev.info.name => {
                    return Err(DevicesError::Mixed {
                        first: i.ordinal,
                        first_name: i.name.clone(),
                        other: d,
                        other_name: dev.info.name.clone(),
                    })
                }
                Some(_) => {}
            }
        }
        Ok(Devices {
            ordinals: ordinals.to_vec(),
            info: info.ok_or(DevicesError::Empty)?,
        })
    }

    /// What the first device is (they are all of its model).
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The devices' ordinals.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// Runs `work` on each of `items` through the queue: every device's thread opens its
    /// device, makes its state with `setup`, then takes the next item when free. An error
    /// takes the device out of the run and its item goes to another device, once; if an item
    /// is still left undone, the first error is returned. Results come in the items' order.
    pub fn run<T, R, E, S>(
        &self,
        items: &[T],
        setup: &(dyn Fn(Device) -> Result<S, E> + Sync),
        work: &(dyn Fn(&mut S, &T) -> Result<R, E> + Sync),
    ) -> Result<(Vec<R>, Usage), E>
    where
        T: Sync,
        R: Send,
        E: Send + From<DeviceError>,
    {
        let lanes: Vec<Lane> = self
            .ordinals
            .iter()
            .map(|d| Lane {
                name: format!("device {d} ({})", self.info.name),
                group: self.info.name.clone(),
            })
            .collect();
        let units: Vec<Unit<usize>> = (0..items.len())
            .map(|i| Unit {
                group: self.info.name.clone(),
                cost: 1.0,
                work: i,
            })
            .collect();
        let open = |lane: usize| {
            let dev = Device::open(self.ordinals[lane]).map_err(E::from)?;
            let mut state = setup(dev)?;
            Ok(move |_: usize, &i: &usize| work(&mut state, &items[i]).map_err(Fault::DeviceLost))
        };
        let out = queue::run(&lanes, units, &open, &|| false, &Quiet);
        let done: Option<Vec<R>> = out.results.into_iter().collect();
        match done {
            Some(results) => Ok((results, out.usage)),
            // An item is left undone only when the devices that took it were lost (or none
            // could be opened), and each left its error.
            None => Err(out
                .lost
                .into_iter()
                .map(|(_, e)| e)
                .next()
                .unwrap_or_else(|| {
                    E::from(DeviceError::NoDevice {
                        ordinal: self.ordinals.first().copied().unwrap_or_default(),
                        count: self.ordinals.len() as i32,
                    })
                })),
        }
    }
}
