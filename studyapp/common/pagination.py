from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.utils.urls import remove_query_param, replace_query_param


class StrictPageNumberPagination(PageNumberPagination):
    """DRF page numbers, but an out-of-range ``page_size`` is a 400, not silently clamped."""

    page_size = 20
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 4 else 0
        if not 1 <= size <= self.max_page_size:
            raise ValidationError(
                {
                    self.page_size_query_param: [
                        f"Expected an integer between 1 and {self.max_page_size}, got {raw!r}."
                    ]
                }
            )
        return size

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        if not raw.isascii() or not raw.isdigit() or int(raw[:19]) < 1:
            raise ValidationError(
                {self.page_query_param: [f"Expected a page number from 1, got {raw!r}."]}
            )
        if len(raw) > 18:  # a valid number, but past the last page of any list
            raise NotFound(self.invalid_page_message)
        return int(raw)

    def get_schema_operation_parameters(self, view):
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == self.page_size_query_param:
                param["schema"].update({"minimum": 1, "maximum": self.max_page_size})
            if param["name"] == self.page_query_param:
                param["schema"].update({"minimum": 1})
        return params


class DuePagination(StrictPageNumberPagination):
    """Page numbers over a counted list, for views that fetch one page themselves.

    The view counts, asks for ``offset``/``limit`` and fetches exactly that slice,
    so no ORM paginator (and no second COUNT) sits in between.
    """

    def start(self, request, count: int) -> tuple[int, int]:
        """``(offset, limit)`` of the requested page; 404 past the last page."""
        self.request = request
        self.count = count
        self.size = self.get_page_size(request)
        self.number = self.get_page_number(request, None)
        last = max(1, -(-count // self.size))
        if self.number > last:
            raise NotFound(self.invalid_page_message)
        return (self.number - 1) * self.size, self.size

    def get_next_link(self):
        if self.number * self.size >= self.count:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.page_query_param, self.number + 1)

    def get_previous_link(self):
        if self.number <= 1:
            return None
        url = self.request.build_absolute_uri()
        if self.number == 2:
            return remove_query_param(url, self.page_query_param)
        return replace_query_param(url, self.page_query_param, self.number - 1)
