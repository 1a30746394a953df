#!/usr/bin/env python3
"""Measures a `crowdfield run --pedpy` output with PedPy and sets the figures beside ours.

    pip install pedpy
    crowdfield run assets/scenarios/bottleneck.scenario.ron --pedpy --out out/bottleneck
    scripts/pedpy_check.py out/bottleneck
    crowdfield bench assets/scenarios/bottleneck.scenario.ron --repeat 1 --pedpy --out out/bench
    scripts/pedpy_check.py out/bench/pedpy/bottleneck-Orca

Reads `trajectories.txt`, `geometry.wkt` (the walkable area: the world's bounds minus the union
of its static obstacles) and `metrics.json` (from `run`; `row.json`, the bench's row, from
`bench`) from the folder. For each measurement area of the
run, PedPy's Voronoi density (cells cut off at 1 m, as ours) averaged over the steps after the
first where a cell reaches the area, and the highest, beside `metrics.json`'s; PedPy's Voronoi
speed is printed too, though it differs from ours by method (PedPy's speeds are central
differences over one step each side and its mean divides by the whole area, where ours are the
last step's displacement and divide by the part the cells reach). For each measurement line,
the crossings PedPy counts and the flow (N - 1) / (t_N - t_1) from its crossing frames, beside
ours (whose crossing times are interpolated within a step).
"""
import json
import pathlib
import sys

try:
    import pedpy
    import shapely
except ImportError:
    sys.exit("needs PedPy (pip install pedpy), which brings shapely")


def walkable_area(path: pathlib.Path) -> "pedpy.WalkableArea":
    bounds, obstacles = (shapely.from_wkt(line) for line in path.read_text().splitlines()[:2])
    parts = list(getattr(obstacles, "geoms", []))
    area = bounds.difference(shapely.unary_union(parts)) if parts else bounds
    if area.geom_type != "Polygon":
        # Obstacles that cut the world in pieces: PedPy takes one polygon, the largest here.
        area = max(area.geoms, key=lambda g: g.area)
    return pedpy.WalkableArea(area)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    ours = out / "metrics.json" if (out / "metrics.json").is_file() else out / "row.json"
    for path in (out / "trajectories.txt", out / "geometry.wkt", ours):
        if not path.is_file():
            sys.exit(f"{path} is missing: run `crowdfield run SCENARIO --pedpy --out {out}`")
    metrics = json.loads(ours.read_text())
    metrics.setdefault("areas", [])
    metrics.setdefault("lines", [])
    traj = pedpy.load_trajectory(trajectory_file=out / "trajectories.txt")
    walkable = walkable_area(out / "geometry.wkt")
    steering = f" ({metrics['steering']})" if "steering" in metrics else ""
    print(
        f"{metrics['scenario']}{steering}: {metrics['steps']} steps, "
        f"{traj.frame_rate:g} frames per second"
    )
    if not metrics["areas"] and not metrics["lines"]:
        print("no measurement areas or lines in this run")
        return
    if metrics["areas"]:
        voronoi = pedpy.compute_individual_voronoi_polygons(
            traj_data=traj,
            walkable_area=walkable,
            cut_off=pedpy.Cutoff(radius=1.0, quad_segments=16),
        )
        speeds = pedpy.compute_individual_speed(
            traj_data=traj,
            frame_step=1,
            speed_calculation=pedpy.SpeedCalculation.BORDER_SINGLE_SIDED,
        )
    for a in metrics["areas"]:
        (x0, y0), (x1, y1) = a["min"], a["max"]
        area = pedpy.MeasurementArea([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        density, intersecting = pedpy.compute_voronoi_density(
            individual_voronoi_data=voronoi, measurement_area=area
        )
        occupied = density[(density.index >= 1) & (density["density"] > 0)]["density"]
        speed = pedpy.compute_voronoi_speed(
            traj_data=traj,
            individual_speed=speeds,
            individual_voronoi_intersection=intersecting,
            measurement_area=area,
        )
        occupied_speed = speed.loc[occupied.index.intersection(speed.index)]["speed"]
        if occupied.empty:
            print(f"  area {a['name']!r}: no step after the first where a cell reaches it "
                  f"(ours {a['occupied_steps']})")
            continue
        print(
            f"  area {a['name']!r}: Voronoi density mean {occupied.mean():.3f} / max "
            f"{occupied.max():.3f} per m² over {len(occupied)} steps (ours "
            f"{a['voronoi_density_mean']:.3f} / {a['voronoi_density_max']:.3f} over "
            f"{a['occupied_steps']}); PedPy's Voronoi speed mean {occupied_speed.mean():.3f} m/s "
            f"(ours {a['voronoi_speed_mean_m_s']:.3f}, by another method)"
        )
    for line in metrics["lines"]:
        measured = pedpy.MeasurementLine([tuple(line["a"]), tuple(line["b"])])
        _, crossing = pedpy.compute_n_t(traj_data=traj, measurement_line=measured)
        frames = sorted(crossing["frame"])
        ours = line["forward"] + line["backward"]
        if len(frames) >= 2 and frames[-1] > frames[0]:
            flow = (len(frames) - 1) / ((frames[-1] - frames[0]) / traj.frame_rate)
            flow_text = f"flow {flow:.3f} per s"
        else:
            flow_text = "no flow (fewer than two crossings)"
        print(
            f"  line {line['name']!r}: {len(frames)} crossings, {flow_text} (ours {ours} "
            f"crossings, flow {line['flow_per_s']:.3f} per s)"
        )


if __name__ == "__main__":
    main()
