//! Data Prepper's expressions. (Being written: see the `wt/event` branch.)
