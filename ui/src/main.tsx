import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createBrowserRouter, Navigate, RouterProvider } from "react-router";
import { AuthProvider } from "./auth";
import { RequireAuth } from "./components/Layout";
import { AccountPage } from "./pages/Account";
import { AcceptInvitation, ForgotPassword, Login, Register, ResetPassword } from "./pages/Auth";
import { AnnotatorPage } from "./pages/Annotator";
import { ImportPage, TaskPage } from "./pages/Import";
import { LabelingPage } from "./pages/Labeling";
import { ProjectLayout, ProjectOverview } from "./pages/Project";
import { ProjectsPage } from "./pages/Projects";
import { WorkspacePage } from "./pages/Workspace";
import { NotFound } from "./pages/NotFound";
import { ModelPage, ModelsPage } from "./pages/Models";
import { AnalysesPage, AnalysisPage } from "./pages/Analyses";
import { ExtractPage, NotificationsPage, ReviewPage, ReviewsPage } from "./pages/Extract";
import "./styles.css";

// The server answers index.html at `/` too; the app's routes live under /app.
if (!window.location.pathname.startsWith("/app")) {
  window.history.replaceState(null, "", "/app/" + window.location.search);
}

const router = createBrowserRouter(
  [
    { path: "/login", element: <Login /> },
    { path: "/register", element: <Register /> },
    { path: "/forgot-password", element: <ForgotPassword /> },
    { path: "/reset-password", element: <ResetPassword /> },
    { path: "/accept-invitation", element: <AcceptInvitation /> },
    {
      element: <RequireAuth />,
      children: [
        { index: true, element: <ProjectsPage /> },
        { path: "workspace", element: <WorkspacePage /> },
        { path: "analyses", element: <AnalysesPage /> },
        { path: "analyses/:analysisId", element: <AnalysisPage /> },
        { path: "notifications", element: <NotificationsPage /> },
        { path: "account", element: <AccountPage /> },
        {
          path: "projects/:projectId",
          element: <ProjectLayout />,
          children: [
            { index: true, element: <ProjectOverview /> },
            { path: "import", element: <ImportPage /> },
            { path: "tasks/:taskId", element: <TaskPage /> },
            { path: "labeling", element: <LabelingPage /> },
            { path: "labeling/:sessionId", element: <AnnotatorPage mode="annotation" /> },
            { path: "corrections/:sessionId", element: <AnnotatorPage mode="correction" /> },
            { path: "models", element: <ModelsPage /> },
            { path: "models/:modelId", element: <ModelPage /> },
            { path: "extract", element: <ExtractPage /> },
            { path: "reviews", element: <ReviewsPage /> },
            { path: "reviews/:hitlId/:reviewId", element: <ReviewPage /> },
          ],
        },
        { path: "home", element: <Navigate to="/" replace /> },
        { path: "*", element: <NotFound /> },
      ],
    },
  ],
  { basename: "/app" },
);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <AuthProvider>
      <RouterProvider router={router} />
    </AuthProvider>
  </StrictMode>,
);
