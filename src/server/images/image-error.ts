// Why an image could not be loaded. The loader (load.ts) turns one into a 400 ApiError naming the
// request field; `code` is the neutral code that error carries.
export type ImageErrorCode =
  /** Bad base64, a media type that is not an image svc decodes, bytes that do not decode. */
  | 'invalid_image'
  /** Over --max-image-bytes or --max-image-pixels. */
  | 'image_too_large'
  /** The URL could not be fetched: unreachable, timed out, an HTTP error, too many redirects, not an image. */
  | 'image_fetch_failed'
  /** The URL's host is (or resolves to) a loopback, private or link-local address and --allow-private-image-urls is off. */
  | 'image_url_forbidden';

export class ImageInputError extends Error {
  constructor(
    readonly code: ImageErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The media types svc decodes, as data: URLs, Anthropic's media_type and HTTP content types name them. */
export const IMAGE_MEDIA_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'];

/** `image/jpg` is a common misspelling of image/jpeg; parameters (`; charset=…`) and case are dropped. */
export function normalizeMediaType(raw: string): string {
  const type = raw.split(';')[0]!.trim().toLowerCase();
  return type === 'image/jpg' ? 'image/jpeg' : type;
}

export function supportedTypesText(): string {
  return IMAGE_MEDIA_TYPES.join(', ');
}
