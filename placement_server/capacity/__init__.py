"""What operators ask of placement's capacity, answered from the resource view.

``inventory``   the inventory columns the view folds into one capacity
                (total, reserved, allocation ratio), kept beside it
``flavors``     the flavors an operator names: how many more of each fit,
                and how fragmented each class's free capacity is
``metrics``     all of it as Prometheus series, in openstack-exporter's names
``explain``     why an allocation candidates request found nothing
"""
