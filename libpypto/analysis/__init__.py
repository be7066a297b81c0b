"""Analyses shared by the scheduler, the simulator and the runtimes (a floor below them).

expand: task instances and their dependences for one binding of the sizes.
work:   GM bytes and FLOPs of a launch, a program's scalars for a launch.
bind:   kernel parameters and the binding of symbolic sizes (arrays, --bind, schedules).
"""
